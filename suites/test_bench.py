"""Every jitbench case × mode as a pytest-benchmark benchmark (parametrized from the registry
by ``jitbench.pytest_plugin.plugin.pytest_generate_tests``).

    pytest --benchmark-only -k matmul_relu
    pytest --benchmark-only -m "jax and jit" --jitbench-size full
"""

from jitbench.pytest_plugin.plugin import run_case


def test_bench(benchmark, jitbench_case, request):
    run_case(benchmark, jitbench_case, request.config)
