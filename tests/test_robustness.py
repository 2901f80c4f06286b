"""Whatever one case does, the run goes on and every case gets exactly one row that says what
happened: real worker processes, real TF and JAX, the test-only workloads of tests/workloads/,
run through the command line as a user runs them.

Two runs, each shared by the tests of its framework (module-scoped fixtures):
- JAX: segfault, abort during setup, hang (short --case-timeout), compile error, memory
  exhaustion, and a well-behaved workload;
- TF: compile error, memory exhaustion, and the two failures users reported against XLA (MMD
  with float32 bandwidths on float64 data, RNN gradient through an unbounded tf.while_loop).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
WORKLOADS = HERE / "workloads"
CASE_TIMEOUT_S = 8  # the hang costs this much; every honest JAX group here takes ~1 s


def jitbench(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "jitbench", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})


def suite_args(*names):
    files = [a for n in names for a in ("--suite-file", WORKLOADS / f"{n}.py")]
    return [*files, "--suite", ",".join(names), "--device", "cpu"]


def listed(args) -> list[str]:
    out = jitbench("list", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()[:-1]  # the last line is the count


def run_and_load(tmp_path_factory, name, args, run_args=()):
    out = tmp_path_factory.mktemp(name)
    # calibration is not the subject here (tests/test_calibration.py): --no-calibrate
    proc = jitbench("run", *args, *run_args, "--min-time", "0.05", "--budget", "1", "--out", out,
                    "--run-id",
                    "r", "--no-report", "--no-calibrate")
    run_dir = out / "r"
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    meta = json.loads((run_dir / "meta.json").read_text())
    return {"proc": proc, "rows": {r["case_id"]: r for r in rows}, "ids": [r["case_id"]
            for r in rows], "meta": meta, "expected": listed(args), "dir": run_dir}


# the two JAX modes these were written for (JIT off, JIT on); aot would add a third per group
JAX_ARGS = [*suite_args("abort_setup", "compile_error", "hang", "oom", "segfault", "tiny"),
            "--framework", "jax", "--mode", "eager,jit"]
TF_ARGS = [*suite_args("compile_error", "oom", "mmd_f32_bandwidths", "rnn_while_unbounded"),
           "--framework", "tf"]


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory):
    return run_and_load(tmp_path_factory, "jax", JAX_ARGS, ["--case-timeout", CASE_TIMEOUT_S])


@pytest.fixture(scope="module")
def tf_run(tmp_path_factory):
    return run_and_load(tmp_path_factory, "tf", TF_ARGS)


def row(run, case_id):
    return run["rows"][case_id]


@pytest.mark.parametrize("which", ["jax_run", "tf_run"])
def test_the_run_completes_with_exactly_one_row_per_case(which, request):
    run = request.getfixturevalue(which)
    assert run["proc"].returncode == 0, run["proc"].stderr[-3000:]
    assert sorted(run["ids"]) == sorted(run["expected"])  # none lost, none twice
    assert run["meta"]["status"] == "complete"
    assert run["meta"]["n_recorded"] == len(run["expected"])


def test_a_segfault_is_a_crashed_row_and_its_group_mate_is_still_measured(jax_run):
    r = row(jax_run, "segfault-default-jax-jit-cpu-float32-n8")
    assert r["status"] == "crashed" and r["error_type"] == "WorkerCrashed"
    assert r["worker_signal"] == "SIGSEGV"
    assert "killed by signal SIGSEGV in mode jit (first call" in r["error"]
    assert "Segmentation fault" in r["error"]  # faulthandler's report, from the worker's log
    assert "segfault.py" in r["error"]  # ... with the Python stack that led to it
    assert r["expected_failure"]
    eager = row(jax_run, "segfault-default-jax-eager-cpu-float32-n8")
    assert eager["status"] == "ok" and eager["n_samples"] >= 1
    assert "mode jit of the same group crashed" in eager["retried_after"]


def test_an_abort_before_any_mode_runs_is_the_row_of_every_mode(jax_run):
    for mode in ("eager", "jit"):
        r = row(jax_run, f"abort_setup-default-jax-{mode}-cpu-float32-n8")
        assert r["status"] == "crashed" and r["worker_signal"] == "SIGABRT"
        assert r["error_phase"].startswith("setup")
        assert "Fatal Python error: Aborted" in r["error"]
        assert "abort_setup.py" in r["error"]


def test_a_hang_is_a_timeout_row_and_the_worker_is_replaced(jax_run):
    r = row(jax_run, "hang-default-jax-jit-cpu-float32-n8")
    assert r["status"] == "timeout" and r["error_type"] == "WorkerTimeout"
    assert f"exceeded the {CASE_TIMEOUT_S} s limit (--case-timeout) in mode jit" in r["error"]
    eager = row(jax_run, "hang-default-jax-eager-cpu-float32-n8")
    assert eager["status"] == "ok"
    assert "mode jit of the same group timed out" in eager["retried_after"]
    failed = [w for w in jax_run["meta"]["workers"] if w.get("failed")]
    assert sorted(w["failed"] for w in failed) == ["crashed", "crashed", "timeout"]
    # the cases after each failure ran in fresh workers
    assert len({r["worker_pid"] for r in jax_run["rows"].values() if r.get("worker_pid")}) >= 4


def test_jax_python_control_flow_on_a_tracer_is_a_compile_error(jax_run):
    r = row(jax_run, "compile_error-default-jax-jit-cpu-float32-n8")
    assert r["status"] == "compile_error"
    assert r["error_type"] == "TracerBoolConversionError"  # a ConcretizationTypeError
    assert "while tracing the function fn" in r["error"] and r["error_phase"] == "first_call"
    assert row(jax_run, "compile_error-default-jax-eager-cpu-float32-n8")["status"] == "ok"


def test_jax_memory_exhaustion_is_an_oom_row(jax_run):
    for mode in ("eager", "jit"):
        r = row(jax_run, f"oom-default-jax-{mode}-cpu-float32-n8")
        assert r["status"] == "oom", r["error"]
        assert "RESOURCE_EXHAUSTED" in r["error"]


def test_the_well_behaved_cases_are_ok(jax_run):
    tiny = [r for r in jax_run["rows"].values() if r["workload"] == "tiny"]
    assert len(tiny) == 12
    assert all(r["status"] == "ok" and r["median_s"] > 0 for r in tiny)


def test_tf_op_without_xla_kernel_is_a_compile_error_naming_the_op(tf_run):
    r = row(tf_run, "compile_error-default-tf-xla-cpu-float32-n8")
    assert r["status"] == "compile_error", r["error"]
    assert r["error_type"] == "InvalidArgumentError"
    assert "Detected unsupported operations" in r["error"]
    assert r["failing_op"] == "PyFuncStateless"  # what tf.numpy_function(stateful=False) is
    for mode in ("eager", "graph", "autoclustering"):
        assert row(tf_run, f"compile_error-default-tf-{mode}-cpu-float32-n8")["status"] == "ok"


def test_tf_memory_exhaustion_is_an_oom_row(tf_run):
    r = row(tf_run, "oom-default-tf-eager-cpu-float32-n8")
    assert r["status"] == "oom" and r["error_type"] == "ResourceExhaustedError"
    assert "OOM when allocating tensor" in r["error"] and r["failing_op"] == "Fill"
    for mode in ("graph", "xla", "autoclustering"):
        assert row(tf_run, f"oom-default-tf-{mode}-cpu-float32-n8")["status"] == "ok"


# ------------------------------------------------------------- failures users reported

def test_mmd_float32_bandwidths_on_float64_data_in_every_tf_mode(tf_run):
    """Today (TF 2.21) every mode rejects the program: eager at the Mul kernel, the traced
    modes while tracing, before XLA is involved. Each is a runtime_error naming Mul; if a
    future TF promotes the constants instead, the rows must be ok and match the reference."""
    statuses = {}
    for mode in ("eager", "graph", "xla", "autoclustering"):
        r = row(tf_run, f"mmd_f32_bandwidths-default-tf-{mode}-cpu-float64-n16-d4")
        statuses[mode] = r["status"]
        assert r["expected_failure"].startswith("user-reported")
        if r["status"] == "ok":
            assert r["max_abs_err"] <= 1e-4
            continue
        assert r["status"] == "runtime_error", r["error"]  # a dtype error, not XLA's
        assert r["error_phase"] == "first_call" and r["failing_op"] == "Mul"
        assert "float" in r["error"] and ("double" in r["error"] or "float64" in r["error"])
        expected_type = "InvalidArgumentError" if mode == "eager" else "TypeError"
        assert r["error_type"] == expected_type
    print("mmd float32 bandwidths:", statuses)


def test_rnn_gradient_through_unbounded_while_loop(tf_run):
    """Today (TF 2.21) eager, graph and auto-clustering compute the right gradient; under
    jit_compile=True XLA refuses the loop's gradient accumulator: a compile_error naming the
    node. Should XLA learn to do it, the row must be ok and match the reference."""
    for mode in ("eager", "graph", "autoclustering"):
        r = row(tf_run, f"rnn_while_unbounded-forward+grad-tf-{mode}-cpu-float32-T5-B2")
        assert r["status"] == "ok", r.get("error")
    r = row(tf_run, "rnn_while_unbounded-forward+grad-tf-xla-cpu-float32-T5-B2")
    assert r["status"] in ("compile_error", "ok"), r.get("error")
    if r["status"] == "compile_error":
        assert "XLA compilation requires a fixed tensor list size" in r["error"]
        assert "maximum_iteration" in r["error"]
        assert r["failing_op"].endswith("/accumulator")
    print("rnn unbounded while_loop under jit_compile=True:", r["status"])


# ------------------------------------------------------------- what comes out of a run

def test_the_html_report_escapes_strings_from_a_run(jax_run, tmp_path):
    """Real rows of the JAX run, with an error message and a workload name full of HTML."""
    from jitbench.report import write_report

    nasty = """<script>alert("x")</script> & 'quoted' <b>bold</b>"""
    rows = list(jax_run["rows"].values())
    for r in rows:
        if r["status"] != "ok":
            r["error"] = nasty + " " + r["error"]
        if r["workload"] == "hang":
            r["workload"] = "hang<i>"
    run = tmp_path / "esc"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "meta.json").write_text((jax_run["dir"] / "meta.json").read_text())
    page = write_report(run, tmp_path / "report").read_text()
    assert "<script>alert" not in page and "<b>bold</b>" not in page and "hang<i>" not in page
    assert "&lt;script&gt;alert(" in page and "hang&lt;i&gt;" in page
    assert "&lt;/script&gt; &amp; " in page
    assert "&#34;x&#34;" in page or "&quot;x&quot;" in page
    assert "&#39;quoted&#39;" in page or "&#x27;quoted&#x27;" in page
