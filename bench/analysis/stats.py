"""Statistics of raw samples: the bootstrap interval of a ratio of medians, significance,
geomean, and the per-row noise verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitbench.analysis.values import row_median, as_number, samples_array, truthy

NOISE_FLOOR = 0.02  # a speedup inside ±2% is "no difference" whatever its interval says
CONFIDENCE = 0.95
N_BOOT = 2000

# Per-row noise verdict thresholds: relative IQR of the samples, CPU steal while it ran.
QUIET_REL_IQR, NOISY_REL_IQR = 0.10, 0.25
QUIET_STEAL_PCT, NOISY_STEAL_PCT = 1.0, 5.0
FEW_SAMPLES = 10


def bootstrap_ratio_ci(numerator: Sequence[float], denominator: Sequence[float], *,
                       confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of median(numerator) / median(denominator).

    Each sample set is resampled on its own (the modes' samples are not paired). With fewer
    than 2 samples on either side there is no interval: ``(nan, nan)``. Deterministic for a
    given ``seed``.
    """
    a, b = samples_array(numerator), samples_array(denominator)
    if a.size < 2 or b.size < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    ma, mb = _resampled_medians(a, rng, n_boot), _resampled_medians(b, rng, n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ratios, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def paired_ratio_ci(numerator: Sequence[float], denominator: Sequence[float], *,
                    confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
                    seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of median(numerator) / median(denominator) for samples
    taken in pairs (element i of each side together, e.g. one round of synced calls): whole
    pairs are resampled, so what moved both sides of a pair cancels. Pairs up to the shorter
    side; ``(nan, nan)`` with fewer than 2 pairs. Deterministic for a given ``seed``."""
    n = min(len(numerator), len(denominator))
    if n < 2:
        return (math.nan, math.nan)
    a = np.asarray(numerator[:n], float)
    b = np.asarray(denominator[:n], float)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ratios, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def _resampled_medians(x: np.ndarray, rng, n_boot: int) -> np.ndarray:
    """The medians of ``n_boot`` resamples (with replacement) of ``x``: the same numbers as
    ``np.median(x[rng.integers(0, n, (n_boot, n))], axis=1)``, from the same draws, 2-5×
    faster (partitioning every resample was most of a report's statistics time).

    A resample is fixed by how often it draws each rank of ``x``; its k-th smallest value
    has the first rank whose running count exceeds k. One running count over a batch of
    resamples (each adds exactly n) finds their middle ranks with a binary search. Batches
    of ~64k draws stay in cache (one array for all 2000 resamples cost a page fault per
    4 KiB, a fifth of the time).
    """
    n = x.size
    order = np.argsort(x, kind="stable")
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(n)
    xs = x[order]
    out = np.empty(n_boot)
    batch = max(64, 2 ** 16 // max(n, 1))
    for start in range(0, n_boot, batch):
        k = min(batch, n_boot - start)
        idx = rng.integers(0, n, size=(k, n))  # the same stream as one (n_boot, n) draw
        before = np.arange(k) * n  # draws made by the batch's resamples before each one
        cum = np.cumsum(np.bincount((rank[idx] + before[:, None]).ravel(), minlength=k * n))
        lo = np.searchsorted(cum, before + (n - 1) // 2, side="right") - before
        hi = np.searchsorted(cum, before + n // 2, side="right") - before
        out[start:start + k] = (xs[lo] + xs[hi]) / 2  # order statistics (n-1)//2 and n//2
    return out


def is_significant(ratio: float, ci_low: float, ci_high: float,
                   noise_floor: float = NOISE_FLOOR) -> bool:
    """The interval excludes 1 and the ratio is outside ±noise_floor (symmetric in log)."""
    if any(math.isnan(x) for x in (ratio, ci_low, ci_high)):
        return False
    if ci_low > 1.0 and ratio > 1.0 + noise_floor:
        return True
    return ci_high < 1.0 and ratio < 1.0 / (1.0 + noise_floor)


def geomean(values: Sequence[float]) -> float:
    v = np.asarray([x for x in values if x is not None and x > 0 and math.isfinite(x)], float)
    return float(np.exp(np.mean(np.log(v)))) if v.size else math.nan


# --------------------------------------------------------------------------- per-row facts

def noise_verdict(row: Mapping[str, Any]) -> tuple[str, str]:
    """("quiet" | "some noise" | "noisy" | "n/a", reason) from the spread of the samples, the
    CPU steal while the case ran, the number of samples and whether warm-up settled."""
    if row.get("status") not in ("ok", "mismatch"):
        return "n/a", "not measured"
    med, iqr = row_median(row), as_number(row.get("iqr_s"))
    s = samples_array(row.get("samples"))
    if math.isnan(iqr) and s.size >= 2:
        q1, q3 = np.percentile(s, [25, 75])
        iqr = float(q3 - q1)
    rel = iqr / med if med and med > 0 and not math.isnan(iqr) else math.nan
    steal = as_number(row.get("cpu_steal_pct"))
    n = int(s.size)
    if not n and not math.isnan(as_number(row.get("n_samples"))):
        n = int(as_number(row.get("n_samples")))
    reasons, level = [], 0
    if not math.isnan(rel):
        if rel > NOISY_REL_IQR:
            level = 2
        elif rel > QUIET_REL_IQR:
            level = max(level, 1)
        reasons.append(f"IQR {100 * rel:.0f}% of median")
    if not math.isnan(steal):
        if steal > NOISY_STEAL_PCT:
            level = 2
        elif steal > QUIET_STEAL_PCT:
            level = max(level, 1)
        if steal > QUIET_STEAL_PCT:
            reasons.append(f"CPU steal {steal:.1f}%")
    if n and n < FEW_SAMPLES:
        level = max(level, 1)
        reasons.append(f"only {n} samples")
    if row.get("settled") is False:
        level = max(level, 1)
        reasons.append("warm-up did not settle")
    if truthy(row.get("steady_state_compiles")):
        level = 2
        reasons.append("still compiling in timed samples")
    if math.isnan(rel) and math.isnan(steal) and not n:
        return "n/a", "no samples"
    return ("quiet", "some noise", "noisy")[level], "; ".join(reasons)
