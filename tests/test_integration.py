"""Every workload × framework × mode at its smallest size, on CPU, with real TF and JAX:
run -> results.jsonl -> load_results -> HTML report.

Every variant too, except the training step's: one of its six, adam with batch norm training
(the most state: Adam slots and moving statistics, both updated); the other five cost ~55 s
here (`make test` must stay under 5 min). tests/test_train_step.py runs the step in every JAX
mode and TF's in-place update, and checks the float64 reference of every model x batch-norm
choice; `pytest suites --benchmark-only -k train_step` runs them all."""

from __future__ import annotations

import json

import pytest

import jitbench
from jitbench.define.workload import Filters, discover, expand
from jitbench.protocol.settings import Protocol
from jitbench.results.files import COLUMNS, SCHEMA_VERSION
from jitbench.run import runner

# sequential stopping stays on (the default path), with a 0.5 s budget per group instead of 6
FAST = Protocol(min_time=0.02, min_samples=3, max_samples=20, max_time=1.0,
                warmup_max_time=0.5, budget=0.5, block_time=0.1)


TRAIN_STEP_VARIANTS = ("adam-bn_train",)


def smallest_cases():
    workloads = discover()
    cases = [c for c in expand(Filters(device=("cpu",)))
             if c.workload != "train_step" or c.variant in TRAIN_STEP_VARIANTS]

    def flops(c):
        return workloads[c.workload][1].flops(c.params, c.variant)

    smallest = {}
    for c in cases:
        key = (c.workload, c.variant, c.dtype)
        smallest[key] = min(smallest.get(key, flops(c)), flops(c))
    return [c for c in cases if flops(c) == smallest[(c.workload, c.variant, c.dtype)]]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return runner.run(smallest_cases(), out, protocol=FAST, command=["pytest"])


def test_every_case_has_exactly_one_ok_row(run_dir):
    expected = {c.case_id for c in smallest_cases()}
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in rows) == sorted(expected)
    bad = {r["case_id"]: (r["status"], r.get("error")) for r in rows if r["status"] != "ok"}
    assert not bad
    assert all(r["schema_version"] == SCHEMA_VERSION for r in rows)


def test_rows_hold_what_jit_really_did(run_dir):
    df = jitbench.load_results(run_dir)
    assert list(df.columns[:len(COLUMNS)]) == COLUMNS
    assert (df["first_call_s"] > 0).all() and (df["median_s"] > 0).all()
    assert (df["n_samples"] >= 3).all()
    assert df["samples"].map(len).eq(df["n_samples"]).all()
    jax_jit = df[(df.framework == "jax") & (df["mode"] == "jit")]
    assert (jax_jit["first_compiles"] >= 1).all()  # measured from jax.monitoring
    tf_xla = df[(df.framework == "tf") & (df["mode"] == "xla")]
    assert (tf_xla["first_compiles"] >= 1).all()  # parsed from XLA's own log lines
    tf_graph = df[(df.framework == "tf") & (df["mode"] == "graph")]
    assert (tf_graph["first_compiles"] == 0).all()
    auto = df[(df["mode"] == "autoclustering") & (df.workload == "matmul_relu")]
    # matmul + relu is below TF's minimum cluster size: no cluster, and the row says so
    assert (auto["clusters_formed"] == 0).all() and auto["note"].str.contains("no XLA").all()
    mmd = df[(df["mode"] == "autoclustering") & (df.workload == "mmd")]
    assert (mmd["clusters_formed"] >= 1).all()
    # float64 really is float64 in JAX: its error against the float64 reference is tiny
    f64 = df[(df.workload == "mmd") & (df.dtype == "float64") & (df.framework == "jax")]
    assert (f64["max_abs_err"] < 1e-3).all()


def test_every_row_says_the_precision_its_products_ran_at(run_dir):
    """On a CPU float32 products run in float32 in both frameworks; the normwise error is
    recorded beside the element-wise ones."""
    df = jitbench.load_results(run_dir)
    assert (df["matmul_precision"] == df["dtype"]).all(), \
        df[["case_id", "dtype", "matmul_precision"]]
    assert (df["norm_rel_err"] >= 0).all()


def test_latency_beside_throughput(run_dir):
    """Every measured row has a synced time per call, every JIT row a synced speedup against
    its verdict's baseline; for the smallest JAX matmul, where eager dispatch is what JIT
    saves, a caller waiting for each result gains less than a pipelined loop."""
    df = jitbench.load_results(run_dir)
    assert (df["synced_median_s"] > 0).all()
    jit = df[df["jit"] & df["verdict_baseline"].notna()]
    assert len(jit) and jit["synced_speedup"].notna().all()
    assert ((jit["synced_ci_low"] <= jit["synced_speedup"])
            & (jit["synced_speedup"] <= jit["synced_ci_high"])).all()
    small = df.set_index("case_id").loc["matmul_relu-fused-jax-jit-cpu-float32-64x64x64"]
    assert small["synced_speedup"] < small["verdict_speedup"]


def test_jax_jit_rows_carry_their_compiled_programs_memory(run_dir):
    """XLA's memory analysis: at least the arguments and the output of the smallest matmul,
    far below a process's peak."""
    df = jitbench.load_results(run_dir)
    jit = df[(df.framework == "jax") & df["mode"].isin(["jit", "aot"])
             & (df.workload == "matmul_relu")]
    assert len(jit) and (jit["status"] == "ok").all()
    for r in jit.to_dict("records"):
        m, k, n = (r["params"][x] for x in "mkn")
        floor = 4 * (m * k + k * n + m * n)  # float32 inputs and output
        assert floor <= r["compiled_memory_bytes"] < floor + 2**20


def test_meta_describes_the_run(run_dir):
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert {"tensorflow", "jax", "jaxlib"} <= set(meta["frameworks"])
    assert meta["machine"]["cpu_model"] and meta["finished_at"]


def test_workers_leave_no_xla_dump_folder_behind(run_dir):
    """A worker ends without the interpreter's teardown (jitbench.run.worker._leave_now), but
    its exit handlers still remove the XLA dump folder it made beside its log."""
    assert (run_dir / "logs").is_dir()
    assert not list((run_dir / "logs").glob("xla-dump-*"))


def test_report_round_trip(run_dir, tmp_path):
    from jitbench.report import write_report

    page = write_report(run_dir, tmp_path / "report")
    html = page.read_text()
    for name in ("matmul_relu", "mmd", "rnn"):
        assert f'id="{name}"' in html
    assert "data:image/png;base64," in html
    assert "http://" not in html and "https://" not in html  # self-contained


def test_gpu_only_columns_degrade_to_empty_on_cpu(run_dir):
    df = jitbench.load_results(run_dir)
    assert "peak_mem_bytes" in df.columns and df["peak_mem_bytes"].isna().all()


def test_gpu_cases_are_skipped_rows_with_a_reason_where_no_gpu(tmp_path):
    cases = [c for c in expand(Filters(suite=("matmul_relu",), framework=("jax",),
                                       device=("gpu",), variant=("fused",)))
             if c.size == "64x64x64"]
    run_dir = runner.run(cases, tmp_path, protocol=FAST)
    df = jitbench.load_results(run_dir)
    if (df["status"] == "ok").all():
        pytest.skip("this machine has a GPU JAX can use")
    assert (df["status"] == "skipped").all()
    assert df["error"].str.contains("JAX sees no gpu device").all()



def test_a_real_run_loads_without_a_warning(run_dir):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a DataWarning here: the reader refuses what a run wrote
        assert len(jitbench.load_results(run_dir)) == len(smallest_cases())


def test_every_field_of_a_real_row_is_documented(run_dir):
    """The docs' result-columns page is generated from jitbench.results.fields: a field a worker
    writes without a description there fails here."""
    from jitbench.results.fields import documented

    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    missing = sorted({k for r in rows for k in r if not documented(k)})
    assert missing == [], f"row fields with no description in bench/results/fields.py: {missing}"


def test_a_file_added_to_suites_as_the_docs_say_is_a_workload(tmp_path):
    """README, "Adding a workload": one file in `suites/` that defines `WORKLOAD`; nothing to
    register. Written into the `suites/` of a copy of the repository, installed apart (never
    into this repository)."""
    import subprocess
    import sys
    import textwrap
    import uuid
    from pathlib import Path

    import shutil

    name = f"added_{uuid.uuid4().hex[:8]}"
    root, src, site = Path(__file__).resolve().parent.parent, tmp_path / "src", tmp_path / "site"
    for folder in ("bench", "suites"):
        shutil.copytree(root / folder, src / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for file in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(root / file, src / file)
    path = src / "suites" / f"{name}.py"
    path.write_text(textwrap.dedent(f'''
        from jitbench.define.workload import Workload


        def inputs(p, dtype, rng):
            return (rng.standard_normal((p["n"], p["n"])).astype(dtype),)


        def jax_stages(p, dtype, variant):
            import jax.numpy as jnp

            return [lambda x: jnp.tanh(x @ x)]


        WORKLOAD = Workload(
            name="{name}", grid={{"quick": [dict(n=16)], "full": [dict(n=64)]}},
            dtypes=("float32",), inputs=inputs,
            reference=lambda xs, p, variant: __import__("numpy").tanh(xs[0] @ xs[0]),
            flops=lambda p, variant: 2.0 * p["n"] ** 3, tolerance={{"float32": (1e-4, 1e-4)}},
            jax=jax_stages)
    '''))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(site), str(src)], check=True,
                   capture_output=True, timeout=300)
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import jitbench; print(jitbench.__file__)"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "jitbench", "run", "--suite", name,
                           "--device", "cpu", "--size", "quick", "--budget", "0.5",
                           "--no-report", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (root / "suites" / f"{name}.py").exists()
    rows = [json.loads(x) for x in next(out.iterdir()).joinpath(
        "results.jsonl").read_text().splitlines()]
    assert {(r["workload"], r["mode"], r["status"]) for r in rows} == {
        (name, m, "ok") for m in ("eager", "jit", "aot")}
