"""pytest-benchmark entry point of jitbench's own suites. The hooks live in
``jitbench.pytest_plugin.plugin``, which installing jitbench registers in every project
(``pytest11``
entry point ``jitbench``); here it is registered only where that did not happen (jitbench run
from a source tree, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), never twice. See README, "Using with
pytest"."""

from jitbench.pytest_plugin import plugin as pytest_plugin


def pytest_addhooks(pluginmanager) -> None:
    # called when this conftest is registered; the plugin's options and configure hook are
    # replayed for it (pytest_addoption is a historic hook)
    if not pluginmanager.is_registered(pytest_plugin) and not pluginmanager.is_blocked(
            "jitbench"):
        pluginmanager.register(pytest_plugin, "jitbench")


def pytest_benchmark_update_machine_info(config, machine_info: dict) -> None:
    # the suites' benchmarks record the machine as jitbench sees it; other projects' stay as
    # pytest-benchmark writes them (the plugin itself does not implement this hook)
    pytest_plugin.update_machine_info(config, machine_info)
