"""History over runs and regression detection: pure DataFrame -> DataFrame.

A *series* is one case × mode followed over runs. A regression of the latest run must pass
three tests, so that ±a few % of machine noise is not flagged and a real 20% slowdown is:

1. **step size**: latest / reference - 1 > threshold, where the reference is the median of the
   series over the previous ``window`` runs (a step test, robust to one odd night);
2. **beyond the series' own noise**: the step also exceeds ``noise_k`` × the relative median
   absolute deviation of the previous runs;
3. **within-run evidence**: the latest raw samples are slower than the previous run's raw samples
   by a one-sided Mann-Whitney U test at ``alpha`` (when both have samples).

A series needs ``min_previous`` earlier runs before it can be flagged. A suspected regression
is re-measured once (``jitbench nightly``) before it is confirmed.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

SERIES_KEYS = ["workload", "variant", "size", "dtype", "framework", "mode", "device"]


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Per-metric relative thresholds (0.10 = 10% slower)."""

    median_s: float = 0.10
    first_call_s: float = 0.50  # first calls (compilation) are far noisier
    window: int = 5
    min_previous: int = 2  # runs of a series needed before it can be flagged at all
    noise_k: float = 3.0
    alpha: float = 0.01


def series_table(df, run_order: Sequence[str]):
    """One row per (series, run) of ok rows, runs numbered in ``run_order`` (oldest first)."""
    ok = df[df["status"] == "ok"].copy()
    ok = ok[ok["run_id"].isin(run_order)]
    ok["run_index"] = ok["run_id"].map({r: i for i, r in enumerate(run_order)})
    ok["series"] = ok[SERIES_KEYS].astype(str).agg("/".join, axis=1)
    return ok.sort_values(["series", "run_index"])


def _one_sided_slower(latest: Sequence[float], previous: Sequence[float]) -> float | None:
    """p-value that ``latest`` samples are larger (slower) than ``previous`` ones."""
    from scipy.stats import mannwhitneyu

    if len(latest) < 3 or len(previous) < 3:
        return None
    return float(mannwhitneyu(latest, previous, alternative="greater").pvalue)


def detect_regressions(df, run_order: Sequence[str], thresholds: Thresholds = Thresholds(),
                       metrics: Sequence[str] = ("median_s", "first_call_s"),
                       latest_rows=None):
    """Compare the last run of ``run_order`` (or ``latest_rows``, e.g. a re-measurement) with
    the runs before it. One row per series and metric, with ``regression`` True/False.

    Columns: series, SERIES_KEYS, case_id, metric, latest, reference, change (fraction),
    noise (relative MAD), p_value, n_previous, regression.
    """
    import numpy as np
    import pandas as pd

    table = series_table(df, run_order)
    latest_id = run_order[-1]
    previous_ids = list(run_order[:-1])[-thresholds.window:]
    if latest_rows is not None:
        latest = series_table(latest_rows, list(latest_rows["run_id"].unique()))
    else:
        latest = table[table["run_id"] == latest_id]
    prev = table[table["run_id"].isin(previous_ids)]
    out = []
    for _, row in latest.iterrows():
        hist = prev[prev["series"] == row["series"]]
        if hist["run_id"].nunique() < thresholds.min_previous:
            continue  # one previous night says too little on a shared machine
        last_prev = hist[hist["run_index"] == hist["run_index"].max()].iloc[0]
        for metric in metrics:
            values = hist[metric].dropna().to_numpy(dtype=float)
            value = row.get(metric)
            if values.size == 0 or value is None or not np.isfinite(value):
                continue
            reference = float(np.median(values))
            change = value / reference - 1.0
            noise = float(np.median(np.abs(values - reference)) / reference) \
                if values.size >= 3 else 0.0
            threshold = getattr(thresholds, metric)
            p_value = None
            if metric == "median_s":
                p_value = _one_sided_slower(row.get("samples") or [],
                                            last_prev.get("samples") or [])
            regression = (change > threshold and change > thresholds.noise_k * noise
                          and (p_value is None or p_value < thresholds.alpha))
            out.append(dict({k: row[k] for k in SERIES_KEYS}, series=row["series"],
                            case_id=row.get("case_id"), metric=metric, latest=float(value),
                            reference=reference, change=change, noise=noise,
                            p_value=p_value, n_previous=int(values.size),
                            regression=bool(regression)))
    cols = ["series", *SERIES_KEYS, "case_id", "metric", "latest", "reference", "change",
            "noise", "p_value", "n_previous", "regression"]
    return pd.DataFrame(out, columns=cols)


def trend(df, run_order: Sequence[str], metric: str = "median_s"):
    """Wide table: one column per series, one row per run (oldest first), values of
    ``metric``; what the history page plots."""
    table = series_table(df, run_order)
    wide = table.pivot_table(index="run_index", columns="series", values=metric,
                             aggfunc="first")
    wide.index = [run_order[i] for i in wide.index]
    return wide
