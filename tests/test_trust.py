"""Numbers that move with the code, not the machine: warm-up before the first case (meta, not
rows), TF auto-clustering interleaved with graph mode in one worker, the interference check and
the A/A control on the rows, and the report's trust section. Real TF and JAX, tiny sizes."""

from __future__ import annotations

import json
import math
import statistics

import pandas as pd
import pytest

import jitbench
from jitbench import analysis
from jitbench.define.workload import Filters, expand
from jitbench.protocol.settings import Protocol
from jitbench.run import runner

FAST = Protocol(min_time=0.02, min_samples=5, max_samples=20, max_time=1.0,
                warmup_max_time=0.5, alone_samples=3, budget=1.0)


def _smallest(suite, framework, variant):
    cases = expand(Filters(suite=(suite,), framework=(framework,), device=("cpu",),
                           dtype=("float32",), variant=(variant,), size="quick"))
    first = cases[0].size
    return [c for c in cases if c.size == first]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    cases = (_smallest("matmul_relu", "tf", "fused") + _smallest("mmd", "tf", "default")
             + _smallest("matmul_relu", "jax", "fused"))
    return runner.run(cases, tmp_path_factory.mktemp("results"), protocol=FAST,
                      command=["pytest"])


@pytest.fixture(scope="module")
def rows(run_dir):
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def _row(rows, workload, framework, mode):
    return next(r for r in rows if (r["workload"], r["framework"], r["mode"])
                == (workload, framework, mode))


def test_warmup_is_in_meta_per_worker_and_mode_never_in_a_row(run_dir, rows):
    meta = json.loads((run_dir / "meta.json").read_text())
    by_fw = {w["framework"]: w for w in meta["workers"]}
    assert set(by_fw["tf"]["startup"]) == {"eager", "graph", "xla", "autoclustering"}
    assert set(by_fw["jax"]["startup"]) >= {"eager", "jit"}
    for w in by_fw.values():
        for mode, s in w["startup"].items():
            assert "error" not in s, (mode, s)
            assert s["first_call_s"] > 0 and s["calls"] == 3
    assert by_fw["tf"]["startup"]["xla"]["compiles"] >= 1  # XLA's compiler started there
    assert by_fw["tf"]["startup"]["autoclustering"]["clusters"] >= 1
    assert not any("startup" in r for r in rows)


def test_autoclustering_is_interleaved_with_graph_in_one_worker(rows):
    for workload in ("matmul_relu", "mmd"):
        auto = _row(rows, workload, "tf", "autoclustering")
        graph = _row(rows, workload, "tf", "graph")
        assert auto["status"] == "ok" and graph["status"] == "ok"
        assert auto["worker_pid"] == graph["worker_pid"]
        assert "graph" in auto["interleaved_with"]
        assert graph["first_clusters"] == 0  # the per-call switch leaves graph mode alone
    mmd = _row(rows, "mmd", "tf", "autoclustering")
    assert mmd["clusters_formed"] >= 1 and mmd["jit_happened"] is True
    mm = _row(rows, "matmul_relu", "tf", "autoclustering")
    assert mm["clusters_formed"] == 0 and mm["jit_happened"] is False
    assert mm["note"].startswith("no JIT happened (same program as graph)")


def test_no_jit_rows_are_not_speedups_and_the_geomean_counts_them_apart(run_dir):
    df = jitbench.load_results(run_dir)
    sp = analysis.speedups(df)
    auto = sp[(sp["mode"] == "autoclustering") & (sp["baseline"] == "graph")]
    by = dict(zip(auto["workload"], auto["verdict"]))
    assert by["matmul_relu"] == analysis.NO_JIT and by["mmd"] != analysis.NO_JIT
    gm = analysis.geomean_speedups(sp, df)
    g = gm[(gm["mode"] == "autoclustering") & (gm["baseline"] == "graph")].iloc[0]
    assert g["n_no_jit"] == 1 and g["n_included"] == 1


def test_interleaved_rows_carry_the_interference_check(rows):
    for r in rows:
        assert r["status"] == "ok", r.get("error")
    # once per worker (Protocol.interference_check="first"): the rows of its first group
    def group(r):
        return (r["workload"], r["variant"], r["framework"], r["dtype"], r["size"])

    first = {}
    for r in rows:
        first.setdefault(r["worker_pid"], group(r))
    checked = [r for r in rows if "alone_samples" in r]
    assert {group(r) for r in checked} == set(first.values())
    assert len({group(r) for r in rows}) > len(first)  # so some groups ran without it
    for r in checked:
        # two blocks alone, in two rounds after the interleaved phase
        assert len(r["alone_samples"]) == 3 and len(r["alone_again_samples"]) == 3
        alone = statistics.median(r["alone_samples"] + r["alone_again_samples"])
        assert r["alone_median_s"] == pytest.approx(alone)
        # the drift every mode of the group shared between the phases is taken out
        assert r["interference"] == pytest.approx(
            r["median_s"] / r["alone_median_s"] / r["interference_shared"])
        assert isinstance(r["interference_flag"], bool)


def test_every_group_measures_an_aa_control_on_its_nearest_baseline(run_dir, rows):
    with_aa = [r for r in rows if "aa_ratio" in r]
    # each group: tf graph (matmul_relu, mmd), jax eager (matmul_relu)
    assert sorted((r["framework"], r["mode"], r["workload"]) for r in with_aa) == [
        ("jax", "eager", "matmul_relu"), ("tf", "graph", "matmul_relu"), ("tf", "graph", "mmd")]
    for r in with_aa:
        assert len(r["aa_samples"]) >= 5 and r["aa_median_s"] > 0
        assert r["aa_ratio"] == pytest.approx(r["median_s"] / r["aa_median_s"])
    controls = analysis.aa_controls(jitbench.load_results(run_dir))
    assert len(controls) == 3 and controls["error"].isna().all()
    # a control whose budget ended before enough blocks has no interval: unresolved, said so
    # (a loaded CI host gets there); every other has one, low before high
    judged = controls[controls["ci_low"].notna()]
    # most controls have one: a run whose controls all lack an interval shows no noise floor
    assert len(judged) * 2 > len(controls), controls[["case_id", "verdict", "ci_low"]]
    assert (judged["ci_low"] <= judged["ci_high"]).all()
    assert set(controls[controls["ci_low"].isna()]["verdict"]) <= {"unresolved"}
    bands = analysis.aa_bands(controls).set_index("framework")
    assert bands.loc["tf", "n_controls"] == 2 and bands.loc["jax", "n_controls"] == 1
    tf = controls[controls["framework"] == "tf"].dropna(subset=["ci_low", "ci_high"])
    if len(tf):  # the band spans the framework's controls that have an interval
        assert bands.loc["tf", "band_low"] == pytest.approx(tf["ci_low"].min())
        assert bands.loc["tf", "band_high"] == pytest.approx(tf["ci_high"].max())


def test_the_report_shows_the_controls_right_after_the_answer(run_dir, tmp_path):
    from jitbench.report import write_report

    page = write_report(run_dir, tmp_path).read_text()
    assert page.index('<section id="speedups">') < page.index('<section id="trust">')
    trust = page[page.index('<section id="trust">'):]
    trust = trust[:trust.index("</section>")]
    assert "Identical programs:" in trust and "tf graph vs itself" in trust
    assert "jax eager vs itself" in trust
    assert "2 groups" in trust and "Each group's control" in trust
    assert "No JIT happened" in trust and "matmul_relu" in trust
    assert "the A/A band" in trust  # the no-JIT row against graph, beside graph's A/A band
    assert "Process start-up" in trust and "Interference check" in trust


# ------------------------------------------------------------- bands and widening, arithmetic

def _control(mode, lo, hi, ratio=1.0, significant=False, framework="tf"):
    return {"framework": framework, "device": "cpu", "mode": mode, "pairing": "p",
            "ratio": ratio, "ci_low": lo, "ci_high": hi, "significant": significant,
            "verdict": ("faster" if ratio > 1 else "slower") if significant else "same",
            "error": None}


@pytest.mark.unit
def test_the_aa_band_spans_every_groups_interval_and_judges_only_its_own_baseline():
    c = pd.DataFrame([_control("graph", 0.99, 1.01), _control("graph", 1.002, 1.03, 1.01, True),
                      _control("graph", 0.98, 1.00, 0.99), _control("eager", 0.9, 1.1,
                                                                       framework="jax")])
    b = analysis.aa_bands(c).set_index("framework")
    assert b.loc["tf", "band_low"] == 0.98 and b.loc["tf", "band_high"] == 1.03
    assert b.loc["tf", "n_controls"] == 3 and b.loc["tf", "n_significant"] == 1
    assert b.loc["tf", "ratio"] == 1.0
    assert b.loc["tf", "n_faster"] == 1 and b.loc["tf", "n_same"] == 2
    bands = analysis.aa_bands(c)
    assert analysis.in_band(bands, "tf", "cpu", "graph", 1.025) is True
    assert analysis.in_band(bands, "tf", "cpu", "graph", 1.04) is False
    # against eager (tf has no eager control) or on a device without one: nothing to say
    assert analysis.in_band(bands, "tf", "cpu", "eager", 1.0) is None
    assert analysis.in_band(bands, "tf", "gpu", "graph", 1.0) is None
    assert analysis.aa_bands(c.iloc[:0]).empty


@pytest.mark.unit
def test_the_scatter_of_identical_programs_is_added_to_every_interval_of_its_framework():
    # tf's controls land at 1.00, 1.02, 0.98, 1.01 and one odd group at 1.30: robust sigma
    ratios = [1.0, 1.02, 0.98, 1.01, 1.30]
    c = pd.DataFrame([_control("graph", r - 0.01, r + 0.01, r) for r in ratios]
                     + [_control("eager", 0.99, 1.01, 1.0, framework="jax")])
    sc = analysis.aa_scatter(c)
    expected = 1.4826 * statistics.median(abs(math.log(r)) for r in ratios)
    assert sc[("tf", "cpu")] == pytest.approx(expected) and sc[("jax", "cpu")] == 0.0
    assert expected < 0.03  # the 1.30 group moved the median of five, not the sigma's scale
    sp = pd.DataFrame({"framework": ["tf", "tf", "jax"], "device": ["cpu"] * 3,
                       "speedup": [1.04, 2.0, 1.04], "ci_low": [1.03, 1.9, 1.03],
                       "ci_high": [1.05, 2.1, 1.05], "significant": [True] * 3,
                       "verdict": ["faster"] * 3})
    w = analysis.widen(sp, sc)
    add = 1.96 * expected
    down = math.sqrt(math.log(1.04 / 1.03) ** 2 + add ** 2)
    assert w["ci_low"].iloc[0] == pytest.approx(1.04 * math.exp(-down))
    assert w["ci_low"].iloc[0] < 1.0 and w["verdict"].iloc[0] == "no difference"
    assert w["aa_scatter"].iloc[0] == pytest.approx(math.expm1(add))
    assert w["ci_widened_by"].iloc[0] > 1.0
    # a real 2x speedup stays significant; jax, whose controls agree, is left as it was
    assert w["verdict"].iloc[1] == "faster" and w["ci_low"].iloc[1] > 1.5
    assert w["ci_low"].iloc[2] == 1.03 and w["ci_widened_by"].iloc[2] == 1.0
    assert w["verdict"].iloc[2] == "faster"


@pytest.mark.unit
def test_without_controls_nothing_is_widened():
    assert analysis.aa_scatter(pd.DataFrame(columns=["framework", "device", "ratio",
                                                     "error"])) == {}
    sp = pd.DataFrame({"framework": ["tf"], "device": ["cpu"], "speedup": [1.2],
                       "ci_low": [1.1], "ci_high": [1.3], "significant": [True],
                       "verdict": ["faster"]})
    same = analysis.widen(sp, {})
    assert same["ci_low"].iloc[0] == 1.1 and same["ci_widened_by"].iloc[0] == 1.0


