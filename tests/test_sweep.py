"""Recompile sweeps, reasons and pitfalls, with real JAX and TF at tiny sizes.

One sweep run (two worker processes, ~15 s) serves the sweep tests; the pitfall workload is
measured by `jitbench run` as a user would (~15 s).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitbench.analysis.recompilation import per_mode, verdict
from jitbench.define.workload import Filters
from jitbench.run import sweep

ROOT = Path(__file__).resolve().parent.parent
PITFALLS = str(ROOT / "tests" / "workloads" / "pitfalls.py")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("sweep")
    jobs = sweep.plan(Filters(suite=("rnn",), mode=("jit", "graph", "xla")), ["seq"])
    jobs += sweep.plan(Filters(suite=("rnn",), framework=("jax",), mode=("jit", "aot")),
                       ["steps-static"])
    rows = sweep.run(jobs, run_dir, timeout=300)
    return run_dir, rows, {(s["sweep"], s["framework"], s["mode"]): s for s in per_mode(rows)}


def test_one_compile_per_new_sequence_length_and_none_on_revisit(swept):
    run_dir, rows, s = swept
    assert sweep.load(run_dir) == rows  # sweep.jsonl holds every call
    for key in (("seq", "jax", "jit"), ("seq", "tf", "xla")):
        assert s[key]["compiles_new"] == [1, 1, 1], s[key]
        assert s[key]["compiles_revisit"] == 0 and s[key]["revisit_free"], s[key]
        assert s[key]["errors"] == 0
        assert verdict(s[key]) == "1 compile(s) per new signature; revisits free"
    # a compile of a new length costs far more than calling an old one again
    assert s[("seq", "tf", "xla")]["new_s"] > 5 * s[("seq", "tf", "xla")]["revisit_s"]


def test_tf_graph_retraces_are_counted_and_timed(swept):
    _, rows, s = swept
    graph = s[("seq", "tf", "graph")]
    assert graph["traces_new"] == [1, 1, 1] and graph["traces_revisit"] == 0
    assert graph["compiles_new"] == [0, 0, 0]
    assert "retrace(s) per new signature" in verdict(graph)
    new = [r for r in rows if r["mode"] == "graph" and not r["revisit"]]
    assert all(r["trace_s"] > 0 for r in new)  # the trace, timed apart from the run


def test_jax_says_why_it_compiled_again(swept):
    _, rows, _ = swept
    second = next(r for r in rows if (r["sweep"], r["mode"], r["step"]) == ("seq", "jit", 1))
    assert second["compiles"] == 1
    assert any("different input types" in x and "f32[16" in x for x in second["reasons"])


def test_static_argument_compiles_once_per_value_and_aot_is_fixed(swept):
    _, rows, s = swept
    jit = s[("steps-static", "jax", "jit")]
    assert jit["compiles_new"] == [1, 1, 1] and jit["revisit_free"]
    aot = [r for r in rows if r["sweep"] == "steps-static" and r["mode"] == "aot"]
    assert [r["status"] for r in aot] == ["ok", "error", "error", "ok", "error", "error"]
    assert "AOT executable compiled for static arguments (4,)" in aot[1]["error"]


def test_cli_sweep_writes_rows_a_page_and_a_table(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "jitbench", "sweep", "--suite", "matmul_relu", "--framework", "jax",
         "--mode", "jit", "--out", str(tmp_path / "r"), "--reports", str(tmp_path / "p"),
         "--run-id", "s1"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "matmul_relu/size" in done.stdout and "revisits free" in done.stdout
    rows = [json.loads(ln) for ln in (tmp_path / "r" / "s1" / "sweep.jsonl").open()]
    assert len(rows) == 6 and {r["signature"] for r in rows} == {"m=32 k=32 n=32",
                                                                 "m=64 k=64 n=64",
                                                                 "m=128 k=128 n=128"}
    assert "Recompilation" in (tmp_path / "p" / "s1" / "index.html").read_text()


def test_an_interrupted_sweep_keeps_its_rows_and_says_so(tmp_path):
    """A Ctrl-C ends a sweep the way it ends a run (``jitbench.run.signals.stop_cleanly``):
    exit 130, the rows so far kept whole, its record ``interrupted``, no worker left."""
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitbench", "sweep", "--suite", "rnn", "--framework", "jax,tf",
         "--out", str(out), "--run-id", "s", "--no-report"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=ROOT)
    rows_file = out / "s" / "sweep.jsonl"
    deadline = time.monotonic() + 240
    while not (rows_file.is_file() and rows_file.read_text().count("\n") >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    rows = [json.loads(ln) for ln in rows_file.read_text().splitlines()]  # every line whole
    called = [r for r in rows if r["mode"] != "aot"]  # (aot fails on new shapes by design)
    assert called and all(r["status"] == "ok" for r in called), called[-1]
    assert f"jitbench: interrupted (SIGINT); {len(rows)} rows kept in {out / 's'}" in err
    assert "Traceback" not in err and "--resume" not in err
    meta = json.loads((out / "s" / "sweep_meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["interrupted_by"] == "SIGINT"
    assert meta["n_recorded"] == len(rows) and meta["workers"]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(out / "s") not in ps  # no worker of this sweep left running


def test_pitfall_rows_carry_steady_state_compiles_and_the_reason(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "jitbench", "run", "--suite-file", PITFALLS, "--suite", "pitfalls",
         "--device", "cpu", "--min-time", "0.05", "--budget", "1", "--no-calibrate",
         "--no-report",
         "--out", str(tmp_path), "--run-id", "p"], capture_output=True, text=True, cwd=ROOT,
        timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {(r["variant"], r["mode"]): r
            for r in map(json.loads, (tmp_path / "p" / "results.jsonl").open())}
    assert all(r["status"] == "ok" for r in rows.values())
    for variant in ("jit-lambda-per-call", "scan-closure"):
        r = rows[(variant, "eager")]
        assert r["steady_state_compiles"] and r["samples_compiles"] > 0, r
        assert any("re-defined repeatedly" in x for x in r["recompile_reasons"]), r
        # jitted as a whole (jit, aot), the inner jit or scan is traced once: no recompiles
        for mode in ("jit", "aot"):
            assert not rows[(variant, mode)]["steady_state_compiles"]
            assert "recompile_reasons" not in rows[(variant, mode)]
    # jax.jit(f) of the same module-level f inside the call hits JAX's cache (JAX 0.10)
    assert not rows[("jit-inside-call", "eager")]["steady_state_compiles"]
