"""The test tiers. ``unit`` (``make test-fast``): no child process, no TensorFlow or JAX
imported; the rest start real runs. A test marked ``unit`` that starts a child process fails,
and so does one that imports a framework: the fast tier stays fast by construction.

``JITBENCH_TEST_TIERS=FILE pytest ...`` writes, per test, whether it started a child process or
imported a framework (JSON lines): the evidence for which tests carry the mark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

FRAMEWORKS = ("tensorflow", "jax")
# calibrations kept by the runs of this test process stay in a folder of its own
# (jitbench.run.calibration.kept), never the user's ~/.cache; removed when the process ends
if "JITBENCH_CACHE" not in os.environ:
    _CACHE = tempfile.TemporaryDirectory(prefix="jitbench-test-cache-")
    os.environ["JITBENCH_CACHE"] = _CACHE.name


def pytest_sessionstart(session):
    """matplotlib builds its font cache the first time its font manager is imported, with a
    child process (``fc-list``): on a fresh machine a unit test that draws would start it and
    fail the tier's no-child rule. Built here, before any test, once per machine."""
    try:
        import matplotlib.font_manager  # noqa: F401
    except ImportError:  # matplotlib is a dependency; nothing to build without it
        pass


def _loaded() -> set[str]:
    return {m for m in FRAMEWORKS if m in sys.modules}


@pytest.fixture(autouse=True)
def _tier(request, monkeypatch):
    unit = request.node.get_closest_marker("unit") is not None
    record = os.environ.get("JITBENCH_TEST_TIERS")
    if not (unit or record):
        yield
        return
    started: list[str] = []
    real_init = subprocess.Popen.__init__

    def popen(self, args, *a, **kw):
        started.append(str(args)[:200])
        if unit and not record:
            raise AssertionError(f"a unit test started a child process: {str(args)[:200]} "
                                 f"(remove the `unit` mark, or test in-process)")
        return real_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    before = _loaded()
    yield
    imported = sorted(_loaded() - before)
    if record:
        with open(record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"test": request.node.nodeid, "children": len(started),
                                 "imported": imported, "unit": unit}) + "\n")
    elif imported:
        raise AssertionError(f"a unit test imported {', '.join(imported)}")


@pytest.fixture(autouse=True)
def _inner_pytest_is_not_an_xdist_worker(request, monkeypatch):
    """Under ``pytest -n N`` (pytest-xdist) each worker has PYTEST_XDIST_* set; a pytest that
    a test starts (pytester) would inherit them and report like a worker, with no terminal
    summary to read. Its own session is a plain one."""
    if "pytester" in request.fixturenames:
        for key in [k for k in os.environ if k.startswith("PYTEST_XDIST")]:
            monkeypatch.delenv(key)
    yield


# The end-to-end tier (`make test-e2e`, run by .ci/run after `make test`): every test of these
# files that is not `unit` starts whole runs, nights, A/B runs or recipes in child processes.
# They are the slowest and the most sensitive to a neighbour test on a 2-core host, so they run
# in a tier of their own, one file after another, and keep `make test` within its time.
# A test elsewhere that runs a user's script or project in a process of its own, a jitbench
# command that measures (doctor, run) as a user runs it, or a whole run is marked `e2e` itself.
E2E_FILES = ("test_integration.py", "test_nightly.py", "test_nightly_recipe.py", "test_ab.py",
             "test_change_night.py", "test_robustness.py", "test_compile_cache.py",
             "test_resume.py", "test_filters.py", "test_pytest_plugin.py", "test_transformer.py",
             "test_jit_fixture.py", "test_old_jitbench_arm.py", "test_nightly_faults.py",
             "test_nightly_faults_lock_e2e.py", "test_release_envs_e2e.py",
             "test_releases_e2e.py", "test_trust.py", "test_insight.py")

# The slowest modules left in `make test`, slowest first (`pytest --durations=0`, summed per
# file). `make test` hands whole files to two processes (`-n 2 --dist loadfile
# --no-loadscope-reorder`) in this order, so the long ones start first and the short ones fill
# in at the end: longest first is what keeps the two busy to the end.
SLOWEST_FIRST = ("test_user_functions.py", "test_release_envs.py", "test_api.py",
                 "test_sweep.py", "test_detectors.py", "test_report.py", "test_run_folders.py",
                 "test_train_step.py")


# Unit tests that take seconds each (a whole report rendered per example, simulations of many
# nights, a recorded corpus replayed): `make test` runs them, `make test-fast` leaves them out
# (`-m "unit and not slow"`) to stay under a minute.
SLOW_UNITS = ("tests/test_properties.py::test_any_rows_load_analyse_and_render",
              "tests/test_sequential.py::test_identical_programs_with_a_much_noisier_baseline",
              "tests/test_ab.py::test_unchanged_code_is_never_slower_or_faster_over_many_seeds",
              "tests/test_detectors.py::test_the_recorded_corpus_replays_with_injections",
              "tests/test_user_functions.py::test_a_keras_fit_epoch_is_run_per_mode_and_its",
              # pages rendered whole (figures drawn), 2-7 s each on a 2-core host
              "tests/test_gpu_pages.py::", "tests/test_run_folders.py::test_damaged_run_reports",
              "tests/test_run_folders.py::test_nightly_history_with_damaged_runs",
              "tests/test_report.py::test_a_run_without_calibration_or_samples_still_renders",
              "tests/test_roofline.py::test_the_report_shows_the_roofline",
              # simulations of many pairs, nights or bisects
              "tests/test_sequential.py::test_identical_streams_are_called_faster_or_slower",
              "tests/test_detectors.py::test_quiet_nights_raise_no_alert_and_a_planted_step",
              "tests/test_detectors.py::test_nights_on_which_the_machine_moved_are_not_judged",
              "tests/test_change_night.py::test_the_replay_counts_false_alerts_steps_found",
              "tests/test_releases_resume.py::test_a_continued_bisect_takes_the_same_halving")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in E2E_FILES and item.get_closest_marker("unit") is None:
            item.add_marker(pytest.mark.e2e)
        if item.nodeid.startswith(SLOW_UNITS):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep
    # their order
