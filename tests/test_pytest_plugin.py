"""The `pytest --benchmark-only` entry point, tested as users run it: whole pytest sessions in a
subprocess (``pytester``, as pytest-benchmark tests itself), their output lines and JSON.

TensorFlow and JAX are imported only in those subprocesses. A toy JAX-only workload
(``--jitbench-suite-file``) covers the failure paths cheaply; one run of the real
``matmul_relu`` covers TF and JAX together.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from jitbench.define.modes import AUTOCLUSTER_FLAGS, MODES, modes_for
from jitbench.define.workload import Filters, expand
from jitbench.pytest_plugin.plugin import _rounds, environment_skip

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
SUITES = str(REPO / "suites")
FAST = ["-p", "no:cacheprovider", "--benchmark-max-time=0.02", "--benchmark-min-rounds=3"]
ISSUE_KEYS = {"framework", "mode", "jit", "device", "workload", "variant", "params", "dtype",
              "first_call_s", "gflops", "max_abs_err", "status"}

TOY = '''
from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    return xs[0] * 2.0


def jax_stages(p, dtype, variant):
    if variant == "wrong":
        return [lambda x: x * 3.0]
    if variant == "branchy":
        def f(x):  # Python `if` on a traced value: fine op by op, jax.jit cannot trace it
            return x * 2.0 if x.sum() > -1e9 else x
        return [f]
    return [lambda x: x * 2.0]


WORKLOAD = Workload(
    name="toy", grid={"quick": [{"n": 8}], "full": [{"n": 16}]}, dtypes=("float64",),
    variants=("ok", "wrong", "branchy"), inputs=inputs, reference=reference,
    flops=lambda p, v: float(p["n"]), tolerance={"float64": (1e-9, 1e-12)}, jax=jax_stages,
    expected_failures={("jax", "jit", "branchy"): "Python control flow on a traced value",
                       ("jax", "aot", "branchy"): "Python control flow on a traced value"})
'''


LOAD_AND_SUMMARIZE = """
import json, sys
import jitbench
from jitbench import analysis
from jitbench.results.files import COLUMNS
df = jitbench.load_results(sys.argv[1])
sp = analysis.speedups(df)
print(json.dumps({
    "columns_first": list(df.columns[:len(COLUMNS)]) == COLUMNS, "n": len(df),
    "statuses": sorted(set(df["status"])), "median_positive": bool((df["median_s"] > 0).all()),
    "speedups": sorted([f, m, b] for f, m, b in zip(sp["framework"], sp["mode"], sp["baseline"])),
}))
"""


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # short-summary lines keep their messages


@pytest.fixture
def toy(pytester) -> list[str]:
    path = pytester.path / "toy_suite.py"
    path.write_text(textwrap.dedent(TOY))
    return [f"--jitbench-suite-file={path}", "--jitbench-suite=toy", "--jitbench-device=cpu"]


# --------------------------------------------------------------------------- sessions

def test_matmul_relu_tf_and_jax_table_json_dataframe_and_report(pytester, tmp_path):
    out = tmp_path / "out.json"
    result = pytester.runpytest_subprocess(
        SUITES, "--benchmark-only", "-k", "matmul_relu and 64x64x64 and fused and cpu",
        f"--benchmark-json={out}", *FAST)
    n = {fw: len(modes_for(fw, stateful=False)) for fw in ("tf", "jax")}  # every mode runs
    result.assert_outcomes(passed=n["tf"] + n["jax"])
    result.stdout.fnmatch_lines_random([
        f"*benchmark 'matmul_relu-fused-tf-cpu-float32-64x64x64': {n['tf']} tests*",
        f"*benchmark 'matmul_relu-fused-jax-cpu-float32-64x64x64': {n['jax']} tests*",
        "test_bench[[]matmul_relu-fused-tf-xla-cpu-float32-64x64x64[]]*",
        "test_bench[[]matmul_relu-fused-jax-jit-cpu-float32-64x64x64[]]*",
        "test_bench[[]matmul_relu-fused-tf-autoclustering-cpu-float32-64x64x64[]]*",
    ])

    doc = json.loads(out.read_text())
    benches = doc["benchmarks"]
    assert len(benches) == n["tf"] + n["jax"]
    for b in benches:
        info = b["extra_info"]
        assert ISSUE_KEYS <= set(info), ISSUE_KEYS - set(info)
        assert info["status"] == "ok" and info["first_call_s"] > 0
        assert info["params"] == {"m": 64, "k": 64, "n": 64}
        assert b["group"] == f"matmul_relu-fused-{info['framework']}-cpu-float32-64x64x64"
        assert b["stats"]["rounds"] >= 3
        # pytest-benchmark's rounds sync every call (latency); the throughput kind beside it
        assert info["synced_median_s"] == b["stats"]["median"]
        assert info["pipelined_median_s"] > 0 and info["matmul_precision"] == "float32"
        # what XLA built, or why there is nothing to show (jitbench.xla.capture)
        assert info.get("hlo_fingerprint") or info.get("hlo_note"), info["mode"]
        if info["mode"] in ("xla", "jit", "aot"):
            assert info["hlo_programs"] == 1 and info["hlo_kernels"] >= 1
    modes = {(b["extra_info"]["framework"], b["extra_info"]["mode"], b["extra_info"]["jit"])
             for b in benches}
    assert modes == {(fw, m, MODES[(fw, m)].jit) for fw in ("tf", "jax")
                     for m in modes_for(fw, stateful=False)}
    assert ("tf", "autoclustering", True) in modes
    mi = doc["machine_info"]["jitbench"]
    assert mi["tensorflow"] and mi["jax"] and mi["jaxlib"] and mi["cpu_model"]
    assert "gpus" in mi and "xla_env" in mi

    # pandas, numpy and matplotlib stay out of this process: pytester restores sys.modules
    # after each test, and numpy cannot be imported twice in one process
    summary = pytester.run(sys.executable, "-c", LOAD_AND_SUMMARIZE, str(out))
    assert summary.ret == 0, summary.stderr.str()
    got = json.loads(summary.outlines[-1])
    assert got["columns_first"] and got["n"] == n["tf"] + n["jax"] and got["statuses"] == ["ok"]
    assert got["median_positive"]
    assert {("jax", "jit", "eager"), ("tf", "xla", "eager"), ("tf", "xla", "graph"),
            ("tf", "autoclustering", "graph")} <= {tuple(s) for s in got["speedups"]}

    report = pytester.run(sys.executable, "-m", "jitbench", "report", str(out), "-o",
                          str(tmp_path / "rep"))
    assert report.ret == 0, report.stderr.str()
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "matmul_relu" in page and "64x64x64" in page


def test_mismatch_fails_compile_error_xfails_where_declared(pytester, toy):
    result = pytester.runpytest_subprocess(SUITES, "--benchmark-only", *toy, *FAST)
    result.assert_outcomes(passed=4, failed=3, xfailed=2)  # aot fails as jit does
    result.stdout.fnmatch_lines_random([
        "FAILED*toy-wrong-jax-eager-cpu-float64-n8*mismatch: output differs from the float64*",
        "FAILED*toy-wrong-jax-jit-cpu-float64-n8*mismatch*",
        "FAILED*toy-wrong-jax-aot-cpu-float64-n8*mismatch*",
        "XFAIL*toy-branchy-jax-jit-cpu-float64-n8*expected compile_error (Python control flow*",
    ])
    result.stdout.no_fnmatch_line("*fixture was not used*")


def test_benchmark_disable_is_a_one_call_smoke_test(pytester, toy):
    result = pytester.runpytest_subprocess(SUITES, "--benchmark-disable", "-v", *toy, *FAST)
    result.assert_outcomes(passed=4, failed=3, xfailed=2)
    result.stdout.no_fnmatch_line("*Rounds*")  # no statistics table


def test_autosave_twice_then_compare(pytester, toy):
    args = [SUITES, "--benchmark-only", *toy, "--jitbench-variant=ok", "--benchmark-storage=st",
            *FAST]
    for n in (1, 2):
        result = pytester.runpytest_subprocess(*args, "--benchmark-autosave")
        result.assert_outcomes(passed=3)  # eager, jit, aot
        result.stderr.fnmatch_lines([f"Saved benchmark data in: *000{n}_*.json"])
    result = pytester.runpytest_subprocess(*args, "--benchmark-compare",
                                           "--benchmark-compare-fail=min:100000%")
    result.assert_outcomes(passed=3)
    # pytest-benchmark's logger writes to stderr, its table to stdout
    both = pytest.LineMatcher(result.outlines + result.errlines)
    both.fnmatch_lines_random([
        "Comparing against benchmarks from: *0002_*.json",
        "*test_bench[[]toy-ok-jax-jit-cpu-float64-n8[]] (0002*",
        "*test_bench[[]toy-ok-jax-jit-cpu-float64-n8[]] (NOW)*",
    ])
    # our machine_info is the same before the tests (when compare loads) and after
    both.no_fnmatch_line("*machine_info is different*")


def test_size_from_option_and_env_and_bad_filters(pytester, toy, monkeypatch):
    result = pytester.runpytest_subprocess(SUITES, "--co", "-q", *toy)
    result.stdout.fnmatch_lines(["*toy-ok-jax-eager-cpu-float64-n8*"])
    result = pytester.runpytest_subprocess(SUITES, "--co", "-q", "--jitbench-size=full", *toy)
    result.stdout.fnmatch_lines(["*toy-ok-jax-eager-cpu-float64-n16*"])
    monkeypatch.setenv("JITBENCH_SIZE", "full")
    result = pytester.runpytest_subprocess(SUITES, "--co", "-q", *toy)
    result.stdout.fnmatch_lines(["*toy-ok-jax-eager-cpu-float64-n16*"])
    result = pytester.runpytest_subprocess(SUITES, "--co", "--jitbench-framework=tff")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*jitbench: unknown framework 'tff'; valid: jax, tf*"])


def test_bare_pytest_at_the_root_deselects_benchmark_only_selects(pytester, monkeypatch):
    monkeypatch.chdir(REPO)  # testpaths apply when pytest starts in the rootdir
    sel = ["-k", "matmul_relu and 64x64x64", "-m", "jax and jit and not aot"]
    bare = pytester.runpytest_subprocess("--co", "-q", "-p", "no:cacheprovider", *sel)
    bare.stdout.fnmatch_lines(["jitbench: * benchmark cases deselected*--benchmark-only*"])
    bare.stdout.no_fnmatch_line("suites/test_bench.py::*")

    run = pytester.runpytest_subprocess("--co", "-q", "-p", "no:cacheprovider",
                                        "--benchmark-only", *sel)
    ids = sorted(line for line in run.outlines if line.startswith("suites/test_bench.py::"))
    assert ids == sorted(f"suites/test_bench.py::test_bench[matmul_relu-{v}-jax-jit-{d}-"
                         f"float32-64x64x64]" for v in ("fused", "split") for d in ("cpu", "gpu"))


# --------------------------------------------------------------------------- pure parts

def _case(framework: str, mode: str):
    return next(c for c in expand(Filters(suite=("matmul_relu",), framework=(framework,),
                                          mode=(mode,), device=("cpu",))))


@pytest.mark.unit
def test_autoclustering_shares_the_process_of_the_other_tf_modes():
    """It is switched on per call (the adapter's call options), so no mode needs an
    environment of its own: none is skipped, with or without the flag the adapter adds."""
    flags = {"TF_XLA_FLAGS": AUTOCLUSTER_FLAGS}
    for mode in ("eager", "graph", "xla", "autoclustering"):
        assert environment_skip(_case("tf", mode), {}) is None
        assert environment_skip(_case("tf", mode), flags) is None


class _Config:
    def __init__(self, **options):
        self.options = {"benchmark_min_time": "0.000005", "benchmark_max_time": "1.0",
                        "benchmark_min_rounds": 5, **options}

    def getoption(self, name):
        return self.options[name]


@pytest.mark.unit
def test_rounds_follow_pytest_benchmark_options():
    assert _rounds(0.01, _Config()) == (100, 1)  # 1 s of 10 ms calls
    assert _rounds(2.0, _Config()) == (5, 1)  # slow calls: still --benchmark-min-rounds
    assert _rounds(1e-6, _Config()) == (10_000, 100)  # 5 µs rounds, capped at 10k rounds
    assert _rounds(0.01, _Config(benchmark_max_time="0.1", benchmark_min_rounds=3)) == (10, 1)
