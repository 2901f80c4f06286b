"""Regression detection on synthetic history with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.history import Thresholds, detect_regressions, trend


def synthetic_history(n_runs=6, slow_series="mmd", slowdown=1.20, noise=0.03, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    runs = [f"run{i}" for i in range(n_runs)]
    for i, run in enumerate(runs):
        for w, base in (("matmul_relu", 1e-3), ("mmd", 5e-3), ("rnn", 2e-3)):
            for mode in ("eager", "jit"):
                level = base * (1 + rng.uniform(-noise, noise))  # night-to-night drift
                if w == slow_series and mode == "jit" and i == n_runs - 1:
                    level *= slowdown
                samples = list(level * (1 + rng.normal(0, 0.01, 30)))
                rows.append(dict(run_id=run, case_id=f"{w}-{mode}", workload=w,
                                 variant="default", size="s", dtype="float32",
                                 framework="jax", mode=mode, device="cpu", status="ok",
                                 median_s=float(np.median(samples)), samples=samples,
                                 first_call_s=0.1 * (1 + rng.uniform(-noise, noise))))
    return pd.DataFrame(rows), runs


def test_a_20_percent_slowdown_is_flagged_and_3_percent_noise_is_not():
    df, runs = synthetic_history()
    reg = detect_regressions(df, runs)
    flagged = reg[reg["regression"]]
    assert list(flagged["case_id"]) == ["mmd-jit"]
    assert list(flagged["metric"]) == ["median_s"]
    assert 0.12 < float(flagged["change"].iloc[0]) < 0.30


def test_noise_alone_is_never_flagged_over_many_seeds():
    for seed in range(20):
        df, runs = synthetic_history(slowdown=1.0, seed=seed)
        assert not detect_regressions(df, runs)["regression"].any(), seed


def test_a_speedup_is_not_a_regression():
    df, runs = synthetic_history(slowdown=0.7)
    assert not detect_regressions(df, runs)["regression"].any()


def test_a_re_measurement_that_is_back_to_normal_clears_the_suspect():
    df, runs = synthetic_history()
    recheck = df[(df["run_id"] == "run4") & (df["case_id"] == "mmd-jit")].copy()
    recheck["run_id"] = "recheck"
    reg = detect_regressions(df, runs, latest_rows=recheck)
    assert not reg["regression"].any()


def test_threshold_is_per_metric():
    df, runs = synthetic_history()
    strict = detect_regressions(df, runs, Thresholds(median_s=0.5))
    assert not strict["regression"].any()


def test_trend_has_one_point_per_run_and_series():
    df, runs = synthetic_history(n_runs=3)
    wide = trend(df, runs)
    assert list(wide.index) == runs and wide.shape == (3, 6)
    assert not wide.isna().any().any()
