"""Regression detection on synthetic histories with known answers: machine drift of 0.5-3x on
absolute times must never be flagged, a planted 30% JIT slowdown must be."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import false_discovery_control

from jitbench.analysis.history import (
    Thresholds,
    benjamini_hochberg,
    detect_regressions,
    points_table,
    run_points,
    trend,
)
from jitbench.analysis.machine import machine_speed

pytestmark = pytest.mark.unit  # no child process, no framework import

# (framework, JIT-off baseline, JIT mode): the pairs jitbench.define.modes declares
PAIRS = (("jax", "eager", "jit"), ("tf", "graph", "xla"))
CASES = [("matmul_relu", "fused", s, 1e-4 * s) for s in (1, 4, 16)] + \
        [("mmd", "broadcast", s, 3e-4 * s) for s in (1, 8)]
SPEEDUP = {"jax": 1.6, "tf": 1.3}


def synthetic_history(n_runs=8, seed=1, slow=None, slowdown=1.30, within=0.05):
    """Rows and metas of ``n_runs`` runs of unchanged code on a drifting machine: each run is
    0.5-3x slower or faster as a whole (absolute times x d, the probe's GFLOP/s / d), each case
    group drifts another ``within`` inside its run (the probe does not see that), each mode
    has 2% noise of its own. ``slow``: case id made ``slowdown`` x slower in the last run."""
    rng = np.random.default_rng(seed)
    rows, metas, runs = [], {}, [f"run{i}" for i in range(n_runs)]
    for i, run in enumerate(runs):
        d = rng.uniform(0.5, 3.0)
        metas[run] = {"run_id": run, "calibration": {"peak": [
            {"source": fw, "framework": fw, "mode": base, "device": "cpu", "status": "ok",
             "gflops": 100.0 / d * (1 + rng.normal(0, 0.03))} for fw, base, _ in PAIRS]}}
        for fw, base, jit in PAIRS:
            for workload, variant, size, t in CASES:
                group = d * math.exp(rng.normal(0, within))
                for mode in (base, jit):
                    case_id = f"{workload}-{variant}-{fw}-{mode}-cpu-float32-{size}"
                    median = t * group * math.exp(rng.normal(0, 0.02))
                    if mode == jit:
                        median /= SPEEDUP[fw]
                        if case_id == slow and i == n_runs - 1:
                            median *= slowdown
                    rows.append(dict(
                        run_id=run, case_id=case_id, workload=workload, variant=variant,
                        size=str(size), dtype="float32", framework=fw, mode=mode, device="cpu",
                        status="ok", median_s=median, interleaved_with=[jit if mode == base
                                                                        else base],
                        first_compiles=1, first_compile_s=0.05 * group * math.exp(
                            rng.normal(0, 0.1)) if mode == jit else None))
    return pd.DataFrame(rows), metas, runs


def judge(df, metas, runs, thresholds=None, **kw):
    points = points_table(df, metas, runs)
    return detect_regressions(points, runs, thresholds, **kw), points


def test_aa_history_with_0_5_to_3x_machine_drift_is_never_flagged():
    for seed in range(30):
        df, metas, runs = synthetic_history(seed=seed)
        medians = df[df["case_id"] == "mmd-broadcast-jax-eager-cpu-float32-8"]["median_s"]
        assert medians.max() / medians.min() > 1.5  # the drift the raw times carry
        tests, _ = judge(df, metas, runs)
        assert (tests["needs"] == 0).all() and len(tests) == 2 * 5 * 4, seed
        assert not (tests["regression"] | tests["advisory"]).any(), (seed, tests.query(
            "regression or advisory"))


@pytest.mark.parametrize("slow", ["matmul_relu-fused-jax-jit-cpu-float32-4",
                                  "mmd-broadcast-tf-xla-cpu-float32-1"])
def test_a_planted_30_percent_jit_slowdown_is_flagged_and_only_it(slow):
    for seed in range(10):
        df, metas, runs = synthetic_history(seed=seed, slow=slow)
        tests, _ = judge(df, metas, runs)
        flagged = tests[tests["regression"]]
        assert list(flagged["case_id"]) == [slow], seed
        assert list(flagged["metric"]) == ["jit_ratio"]
        row = flagged.iloc[0]
        # judged on the quieter of its two quantities: the ratio, or the JIT time against the
        # machine (which carries the group's own drift of that run, +-5% here)
        assert row["quantity"] in ("jit_ratio", "jit_time")
        low = 0.2 if row["quantity"] == "jit_ratio" else 0.1
        assert low < row["change"] < 0.45 and row["q_value"] < 0.05


def test_a_slower_baseline_is_advisory_on_its_probe_normalised_time_and_a_faster_jit_is_not():
    slow = "matmul_relu-fused-tf-graph-cpu-float32-16"
    df, metas, runs = synthetic_history(seed=3, slow=None)
    last = (df["run_id"] == runs[-1]) & (df["case_id"] == slow)
    df.loc[last, "median_s"] *= 2.0  # the baseline got 2x slower: its JIT partner "speeds up"
    tests, _ = judge(df, metas, runs)
    assert not tests["regression"].any()
    advisory = tests[tests["advisory"]]
    assert list(zip(advisory["case_id"], advisory["metric"])) == [(slow, "baseline_norm")]
    tests, _ = judge(df, metas, runs, Thresholds(judge_absolute=True))  # a quiet machine
    flagged = tests[tests["regression"]]
    assert list(zip(flagged["case_id"], flagged["metric"])) == [(slow, "baseline_norm")]
    assert not tests["advisory"].any()


def test_a_verdict_needs_five_earlier_runs():
    df, metas, runs = synthetic_history(n_runs=5, slow="mmd-broadcast-jax-jit-cpu-float32-8",
                                        slowdown=3.0)
    tests, _ = judge(df, metas, runs)
    assert (tests["needs"] == 1).all() and not tests["regression"].any()
    assert tests["p_value"].isna().all()


def test_near_identical_history_reads_the_noise_floor_not_zero():
    df, metas, runs = synthetic_history(seed=5)
    jit, eager = (df["case_id"] == f"mmd-broadcast-jax-{m}-cpu-float32-8" for m in ("jit", "eager"))
    df.loc[jit, "median_s"] = df.loc[eager, "median_s"].to_numpy() / 1.6  # 7 identical ratios
    df.loc[jit & (df["run_id"] == runs[-1]), "median_s"] *= 1.06  # then a 6% step
    tests, _ = judge(df, metas, runs)
    t = tests[(tests["metric"] == "jit_ratio") & (tests["case_id"] == df.loc[jit, "case_id"]
                                                  .iloc[0])].iloc[0]
    assert t["noise"] == Thresholds().floor_paired and 0.05 < t["change"] < 0.07
    assert not t["regression"]
    tests, _ = judge(df, metas, runs, Thresholds(detector="quantile"))  # the rule before
    t = tests[(tests["metric"] == "jit_ratio") & (tests["case_id"] == t["case_id"])].iloc[0]
    assert t["noise"] == Thresholds().floor_ratio and not t["regression"]


def test_a_compile_count_rising_over_a_constant_history_is_flagged():
    df, metas, runs = synthetic_history(seed=2)
    case = "matmul_relu-fused-jax-jit-cpu-float32-1"
    df.loc[(df["run_id"] == runs[-1]) & (df["case_id"] == case), "first_compiles"] = 3
    flagged = judge(df, metas, runs)[0].query("regression")
    assert list(zip(flagged["case_id"], flagged["metric"])) == [(case, "compiles")]
    # a count that already varied says nothing
    df.loc[(df["run_id"] == runs[2]) & (df["case_id"] == case), "first_compiles"] = 2
    assert not judge(df, metas, runs)[0]["regression"].any()


def test_a_re_measurement_back_to_normal_clears_the_suspect_and_one_still_slow_confirms():
    slow = "matmul_relu-fused-jax-jit-cpu-float32-16"
    df, metas, runs = synthetic_history(seed=4, slow=slow)
    tests, points = judge(df, metas, runs)
    only = set(zip(tests.loc[tests["regression"], "series"],
                   tests.loc[tests["regression"], "metric"]))
    assert len(only) == 1
    for factor, confirmed in ((1.0, False), (1.3, True)):
        again = df[(df["run_id"] == runs[-2]) & (df["case_id"].str.contains("fused-jax"))].copy()
        again.loc[again["case_id"] == slow, "median_s"] *= factor
        again["run_id"] = "recheck"
        latest = points_table(again, {"recheck": metas[runs[-2]]}, ["recheck"])
        redo = detect_regressions(points, runs, latest=latest, only=only)
        assert len(redo) == 1 and bool(redo["regression"].iloc[0]) is confirmed


def test_no_ratio_without_its_interleaved_baseline_and_no_normalised_time_without_a_probe():
    df, metas, runs = synthetic_history(n_runs=1)
    rows = df.to_dict("records")
    for r in rows:
        r["interleaved_with"] = []
    pts = run_points(rows, metas[runs[0]]["calibration"])
    assert {p["metric"] for p in pts} == {"compiles", "compile_norm", "baseline_norm"}
    pts = run_points(df.to_dict("records"), None)
    assert {p["metric"] for p in pts} == {"compiles", "jit_ratio"}


def test_benjamini_hochberg_matches_scipy():
    p = np.random.default_rng(0).uniform(0, 0.1, 40)
    assert np.allclose(benjamini_hochberg(list(p)), false_discovery_control(p))


def test_trend_has_one_point_per_run_and_ratio_series():
    df, metas, runs = synthetic_history(n_runs=3)
    wide = trend(points_table(df, metas, runs), runs)
    assert list(wide.index) == runs and wide.shape == (3, 10)
    assert not wide.isna().any().any()


def _ratio_points(values):
    """A jit_ratio series with the given values, one run each (run0 oldest)."""
    runs = [f"run{i}" for i in range(len(values))]
    pts = pd.DataFrame([dict(run_id=r, run_index=i, series="w/v/s/float32/jax/jit/cpu",
                             workload="w", variant="v", size="s", dtype="float32",
                             framework="jax", mode="jit", device="cpu", case_id="c",
                             metric="jit_ratio", value=v) for i, (r, v) in
                        enumerate(zip(runs, values))])
    return pts, runs


def test_a_level_the_series_often_visited_is_no_regression_but_a_new_one_is():
    # measured here: mmd outer f32 n256 JAX jit ran 1.7x slower in 3 of 10 fresh processes
    fast, slow = 0.052, 0.085
    history = [fast, slow, fast, fast, fast, slow, slow, fast, fast, fast]
    for detector in ("quantile", "paired"):
        _familiar_levels(detector, fast, slow, history)


def _familiar_levels(detector, fast, slow, history):
    th = Thresholds(detector=detector)
    pts, runs = _ratio_points(history + [0.080])
    (r,) = detect_regressions(pts, runs, th).to_dict("records")
    assert r["change"] > 0.3 and r["q_value"] < 0.05  # a big, "significant" step...
    assert r["usual_high"] >= slow * 0.95 and not r["regression"]  # ...to a familiar level
    pts, runs = _ratio_points(history + [0.12])  # beyond anything seen before
    (r,) = detect_regressions(pts, runs, th).to_dict("records")
    assert r["regression"]
    # a single odd night in the history does not make a 30% step familiar
    pts, runs = _ratio_points([fast] * 4 + [0.09] + [fast] * 5 + [fast * 1.3])
    (r,) = detect_regressions(pts, runs, th).to_dict("records")
    assert r["regression"]


def test_machine_speed_is_the_median_factor_over_the_cases_both_nights_measured():
    df, _, runs = synthetic_history(n_runs=3, seed=4)
    df.loc[df["run_id"] == runs[2], "median_s"] = (
        df.loc[df["run_id"] == runs[1], "median_s"].to_numpy() * 1.5)
    df.loc[(df["run_id"] == runs[2]) & (df["case_id"].str.contains("tf-xla")), "status"] = "error"
    speed = machine_speed(df, runs[1], runs[2])
    n = len(df[df["run_id"] == runs[2]]) - 5  # the failed cases are left out
    assert speed["factor"] == pytest.approx(1.5) and speed["cases"] == n
    assert speed["q10"] == pytest.approx(1.5) and speed["q90"] == pytest.approx(1.5)
    assert machine_speed(df, runs[1], "no-such-night") is None


def test_a_jit_ratio_that_rose_because_its_baseline_fell_is_not_a_regression():
    """The last night's JAX eager baseline of one case runs 3x faster, its JIT time unchanged:
    the ratio triples, but the JIT mode did not slow down (``baseline_fell``)."""
    base = "matmul_relu-fused-jax-eager-cpu-float32-4"
    df, metas, runs = synthetic_history(seed=4)
    last = (df["run_id"] == runs[-1]) & (df["case_id"] == base)
    df.loc[last, "median_s"] /= 3
    tests, points = judge(df, metas, runs)
    mine = tests[(tests["case_id"] == base.replace("eager", "jit"))
                 & (tests["metric"] == "jit_ratio")].iloc[0]
    assert mine["change"] > 1.5 and mine["baseline_fell"] and not mine["regression"]
    assert not tests.loc[tests["metric"] == "jit_ratio", "regression"].any()
    assert set(points.loc[points["metric"] == "jit_ratio", "base_s"].dropna() > 0) == {True}
