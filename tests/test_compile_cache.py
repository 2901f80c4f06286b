"""--compile-cache warm and the first-call anatomy, with real JAX and TF (one tiny case group
per framework: two workers cold, two fresh ones warm), and the report's section."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ONE = str(ROOT / "tests" / "workloads" / "one_matmul.py")


@pytest.fixture(scope="module")
def warm_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cc")
    done = subprocess.run(
        [sys.executable, "-m", "jitbench", "run", "--suite-file", ONE, "--suite", "one_matmul",
         "--device", "cpu", "--mode", "eager,jit,graph,xla", "--min-time", "0.02", "--budget", "1",
         "--no-calibrate", "--compile-cache", "warm", "--out", str(out / "r"),
         "--reports", str(out / "p"), "--run-id", "w"], capture_output=True, text=True,
        cwd=ROOT, timeout=400, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {(r["framework"], r["mode"]): r
            for r in map(json.loads, (out / "r" / "w" / "results.jsonl").open())}
    return out, rows


def test_warm_cache_hits_and_shortens_jax_jit_first_call(warm_run):
    out, rows = warm_run
    meta = json.loads((out / "r" / "w" / "meta.json").read_text())
    assert meta["compile_cache"] == "warm"
    assert any((out / "r" / "w" / "compile-cache").iterdir())  # JAX and TF entries written
    jit = rows[("jax", "jit")]
    assert jit["first_cache_misses"] >= 1 and jit["cache_hits"] >= 1
    assert jit["first_call_cold_s"] == jit["first_call_s"]
    # on a hit JAX still traces and lowers, but retrieves instead of compiling
    assert jit["warm_cache_retrieval_s"] > 0
    assert jit["warm_compile_s"] < jit["first_compile_s"]
    assert "warm_note" not in jit
    # TF 2.21 writes the entry, but keys it by the function's process-unique name: the warm
    # worker traced other functions first, so it may miss (bench/compile_cache.py)
    xla = rows[("tf", "xla")]
    assert xla["first_cache_misses"] >= 1 and xla["first_call_warm_s"] > 0
    assert (xla["cache_hits"] >= 1) != ("warm_note" in xla)
    assert any(f.name.startswith("xla_compile_cache__")
               for f in (out / "r" / "w" / "compile-cache").iterdir())


def test_tf_rows_split_the_first_call(warm_run):
    _, rows = warm_run
    xla, graph = rows[("tf", "xla")], rows[("tf", "graph")]
    assert 0 < xla["first_trace_s"] < xla["first_call_s"]
    assert 0 < xla["first_compile_s"] < xla["first_call_s"]
    assert xla["first_traces"] == 1 and xla["warmup_traces"] == 0
    assert graph["first_traces"] == 1 and graph["first_compiles"] == 0
    assert graph["first_trace_s"] > 0


def test_report_shows_the_anatomy_and_both_break_evens(warm_run):
    out, _ = warm_run
    page = (out / "p" / "w" / "index.html").read_text()
    section = page[page.index('id="first_call"'):]
    section = section[:section.index("</section>")]
    assert 'alt="first-call anatomy per JIT mode"' in section
    assert "break-even, cold" in section and "break-even, warm" in section
    assert "jax jit (vs eager)" in section and "tf xla (vs graph)" in section


def test_a_ctrl_c_in_the_warm_pass_leaves_a_run_that_resume_completes(tmp_path):
    """The warm pass runs inside the run's session: interrupted there, the run is not
    `complete`; `--resume` runs the warm pass and completes it, its workers in meta.json."""
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "jitbench", "run", "--suite-file", ONE, "--suite", "one_matmul",
         "--device", "cpu", "--framework", "jax", "--mode", "eager,jit", "--min-time", "0.02",
         "--budget", "0.5", "--no-calibrate", "--no-report", "--compile-cache", "warm",
         "--out", str(tmp_path), "--run-id", "w"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "warm compile cache:" in line:
            proc.send_signal(signal.SIGINT)
            break
    proc.stderr.read()
    assert proc.wait(timeout=120) != 0, "".join(seen)[-2000:]
    meta = json.loads((tmp_path / "w" / "meta.json").read_text())
    assert meta["status"] == "interrupted", meta["status"]
    done = subprocess.run([sys.executable, "-m", "jitbench", "run", "--resume",
                           str(tmp_path / "w")], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads((tmp_path / "w" / "meta.json").read_text())
    assert meta["status"] == "complete"
    rows = [json.loads(x) for x in (tmp_path / "w" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all("first_call_cold_s" in r for r in rows)
    jit = next(r for r in rows if r["mode"] == "jit")
    assert jit["first_call_warm_s"] > 0
    groups = json.dumps(meta.get("workers"))
    assert "warm:" in groups, groups[:500]
