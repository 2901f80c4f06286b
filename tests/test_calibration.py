"""jitbench.run.calibration: which cases it measures, the meta it writes, and one real (JAX) run."""

from __future__ import annotations

import json
import os
import time

import pytest

from jitbench import analysis
from jitbench.define.workload import Filters, expand, load_workload
from jitbench.run import calibration


@pytest.mark.unit
def test_calibration_cases_cover_the_runs_frameworks_and_modes_in_default_workers():
    cases = expand(Filters(suite=("matmul_relu",), device=("cpu",), variant=("fused",)))
    cal = calibration.calibration_cases(cases)
    got = {(c.workload, c.framework, c.mode) for c in cal}
    for wl in ("calibration_peak_matmul", "calibration_dispatch", "calibration_bandwidth"):
        assert {(wl, "jax", "eager"), (wl, "jax", "jit"), (wl, "jax", "aot"),
                (wl, "tf", "eager"),
                (wl, "tf", "graph"), (wl, "tf", "xla")} == {g for g in got if g[0] == wl}
    # auto-clustering dispatches a no-op as graph mode does: its floor is derived from graph
    assert not any(c.mode == "autoclustering" for c in cal)
    for c in cal:  # each is a loadable workload case
        assert load_workload(c.source).name == c.workload


@pytest.mark.unit
def test_calibration_cases_follow_the_mode_filter():
    cases = expand(Filters(suite=("matmul_relu",), framework=("tf",), mode=("autoclustering",),
                           device=("cpu",)))
    cal = calibration.calibration_cases(cases)
    assert {c.mode for c in cal} == {"graph"}  # what autoclustering's floor is taken from


@pytest.mark.unit
def test_summarize_keeps_peaks_floors_and_says_what_was_not_measured():
    rows = [
        {"workload": "calibration_peak_matmul", "framework": "tf", "mode": "graph",
         "device": "cpu", "status": "ok", "min_s": 0.01, "median_s": 0.012, "flops": 2e9,
         "gflops": 2e9 / 0.012 / 1e9},
        {"workload": "calibration_dispatch", "framework": "tf", "mode": "graph",
         "device": "cpu", "status": "ok", "median_s": 3e-4},
        {"workload": "calibration_dispatch", "framework": "tf", "mode": "xla",
         "device": "cpu", "status": "crashed", "error": "worker died <oops>"},
    ]
    numpy_entry = {"source": "numpy", "framework": None, "mode": None, "device": "cpu",
                   "gflops": 150.0, "status": "ok", "error": None}
    modes = {("tf", "graph", "cpu"), ("tf", "xla", "cpu"), ("tf", "autoclustering", "cpu"),
             ("jax", "jit", "cpu")}
    cal = calibration.summarize(rows, numpy_entry, modes, elapsed_s=1.23456)
    json.dumps(cal)  # goes to meta.json as is
    assert cal["version"] == calibration.CALIBRATION_VERSION and cal["elapsed_s"] == 1.235
    tf_peak = next(p for p in cal["peak"] if p["source"] == "tf")
    assert tf_peak["gflops"] == pytest.approx(200.0)  # from the fastest call
    assert tf_peak["gflops_median"] == pytest.approx(2e9 / 0.012 / 1e9)
    floors = {(d["framework"], d["mode"]): d for d in cal["dispatch"]}
    assert floors[("tf", "graph")]["floor_s"] == 3e-4
    assert floors[("tf", "xla")]["status"] == "crashed" and floors[("tf", "xla")]["floor_s"] is None
    auto = floors[("tf", "autoclustering")]
    assert auto["status"] == "derived" and auto["floor_s"] == 3e-4 and "graph" in auto["note"]
    assert floors[("jax", "jit")]["status"] == "not measured"
    # the analysis reads it back: the best peak, and derived floors count
    assert _best_peak(cal) == ("cpu", 200.0, "tf graph")


def _best_peak(cal):
    p = analysis.peak_gflops(cal).iloc[0]
    return p["device"], p["peak_gflops"], p["peak_source"]


@pytest.mark.unit
def test_numpy_peak_with_a_fake_clock():
    ticks = iter(range(100))
    entry = calibration.numpy_peak(n=8, reps=3, clock=lambda: float(next(ticks)))
    assert entry["min_s"] == 1.0 and entry["gflops"] == pytest.approx(2 * 8 ** 3 / 1e9)


@pytest.mark.e2e  # a whole run, its calibration measured first
def test_a_run_with_calibration_keeps_it_in_meta_and_the_report_uses_it(tmp_path,
                                                                       monkeypatch):
    from jitbench.protocol.settings import Protocol
    from jitbench.report import write_report
    from jitbench.run import runner

    monkeypatch.setenv("JITBENCH_CACHE", str(tmp_path / "cache"))  # none kept before
    cases = [c for c in expand(Filters(suite=("matmul_relu",), framework=("jax",),
                                       device=("cpu",), variant=("fused",)))
             if c.size == "64x64x64"]
    seen = []
    run_dir = runner.run(cases, tmp_path, calibrate=True, process_profile="stable",
                         protocol=Protocol(min_time=0.02, min_samples=3, max_samples=20),
                         on_progress=seen.append)
    assert any(p.current.startswith("calibration: jax cpu: peak_matmul of ") for p in seen)
    meta = json.loads((run_dir / "meta.json").read_text())
    # the stable process profile: every worker pinned to one core (the first this process may
    # use), recorded as such
    assert meta["process_profile"] == "stable"
    assert [w["cpu_affinity"] for w in meta["workers"]] == [[min(os.sched_getaffinity(0))]]
    cal = meta["calibration"]
    peaks = {p["source"]: p for p in cal["peak"]}
    assert peaks["numpy"]["gflops"] > 1
    assert {(p["framework"], p["mode"]) for p in cal["peak"] if p["source"] == "jax"} == \
        {("jax", "eager"), ("jax", "jit"), ("jax", "aot")}
    assert all(p["status"] == "ok" and p["gflops"] > 1 for p in cal["peak"])
    # a no-op dispatch is microseconds, far below the 1024^3 matmul's milliseconds
    floors = {d["mode"]: d for d in cal["dispatch"]}
    assert set(floors) == {"eager", "jit", "aot"}
    assert all(0 < d["floor_s"] < 1e-3 for d in floors.values())
    # the triad's bandwidth in every mode: more than 0.1 GB/s on any machine this runs on
    bw = {d["mode"]: d for d in cal["bandwidth"]}
    assert set(bw) == {"eager", "jit", "aot"}
    assert all(d["status"] == "ok" and d["gbps"] > 0.1 for d in bw.values())
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in rows) == sorted(c.case_id for c in cases)  # no extras
    html = write_report(run_dir, tmp_path / "report").read_text()
    assert "float32 matmul peak" in html and "dispatch floor per mode" in html
    # measured by the run's own worker, before its cases: no worker of its own
    assert not list((run_dir / "logs").glob("calibration-*"))
    assert "kept_from" not in cal
    # the next run on this machine and software reads it instead of measuring it again
    again = runner.run(cases, tmp_path, calibrate=True, process_profile="stable",
                       protocol=Protocol(min_time=0.02, min_samples=3, max_samples=20))
    kept = json.loads((again / "meta.json").read_text())["calibration"]
    assert kept["kept_from"]["run_id"] == run_dir.name
    assert kept["dispatch"] == cal["dispatch"]


@pytest.mark.unit
def test_a_kept_calibration_must_match_the_machine_and_software_and_be_recent(tmp_path,
                                                                             monkeypatch):
    from jitbench.run.calibration import kept

    monkeypatch.setenv(kept.CACHE_ENV, str(tmp_path))
    facts = {"version": 2, "cpu_model": "X", "frameworks": {"jax": "0.10.2"}, "cases": ["a"]}
    assert kept.load(facts) is None
    kept.keep(facts, {"peak": [1]}, "run-1")
    got = kept.load(facts)
    assert got["peak"] == [1] and got["kept_from"]["run_id"] == "run-1"
    assert kept.load(dict(facts, frameworks={"jax": "0.10.3"})) is None  # another version
    assert kept.load(facts, now=time.time() + kept.MAX_AGE_S + 1) is None  # too old


@pytest.mark.unit
def test_the_peak_matmul_reaches_each_devices_plateau():
    """A GPU's peak is measured at 8192^3 (1024^3 is launch-bound there), a CPU's at 1024^3."""
    from jitbench.define.workload import Filters, expand
    from jitbench.run.calibration import calibration_cases

    cases = expand(Filters(suite=("matmul_relu",), framework=("jax",), variant=("fused",)))
    sizes = {c.device: c.params["n"] for c in calibration_cases(cases)
             if c.workload == "calibration_peak_matmul"}
    assert sizes == {"cpu": 1024, "gpu": 8192}
