"""pytest-benchmark entry point: the hooks live in ``bench.pytest_plugin`` (one place for the
harness logic); pytest finds them here by name. See README, "Using with pytest"."""

from bench.pytest_plugin import (  # noqa: F401  (hooks, found by name)
    pytest_addoption,
    pytest_benchmark_update_machine_info,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_report_collectionfinish,
)
