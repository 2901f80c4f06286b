"""How far apart identical programs land in this run: the A/A controls, and what they do to the
speedup intervals.

A worker times its framework's nearest JIT-off mode a second time, built afresh and
interleaved like a JIT mode (``bench.worker``, fields ``aa_*`` on that mode's row). Its
**ratio** (mode median / control median, read like a speedup) and its bootstrap interval are
what "no difference" looks like today, measured the way real pairs are. When a control's
interval excludes 1, the run's intervals are too narrow: :func:`widening_factor` is how much
wider (in log space) they must be for that control to include 1, and :func:`widen` applies it
to the speedups (never narrowing them).
"""

from __future__ import annotations

import math

import numpy as np

from .stats import CONFIDENCE, N_BOOT, bootstrap_ratio_ci
from .values import _pd, _samples

CONTROL_COLUMNS = ["framework", "device", "mode", "workload", "variant", "dtype", "size",
                   "pairing", "ratio", "ci_low", "ci_high", "significant", "widen_by",
                   "n_samples", "error"]


def aa_controls(df, *, confidence: float = CONFIDENCE, n_boot: int = N_BOOT, seed: int = 0):
    """One row per A/A control of the run (a row with ``aa_samples`` or ``aa_error``).

    ``significant``: the interval excludes 1 (no noise floor here: a control has no effect to
    be small). ``widen_by``: the factor of :func:`widening_factor` for this control alone
    (1.0 when its interval includes 1)."""
    pd = _pd()
    out = []
    has = [c for c in ("aa_samples", "aa_error") if c in df.columns]
    if not has:
        return pd.DataFrame([], columns=CONTROL_COLUMNS)
    mask = False
    for c in has:
        mask = mask | df[c].notna()
    for r in df[mask].to_dict("records"):
        base = dict(framework=r.get("framework"), device=r.get("device"), mode=r.get("mode"),
                    workload=r.get("workload"), variant=r.get("variant"), dtype=r.get("dtype"),
                    size=r.get("size"), pairing=r.get("aa_pairing") or "", n_samples=0)
        a, b = _samples(r.get("samples")), _samples(r.get("aa_samples"))
        if not isinstance(r.get("aa_error"), str) and len(a) and len(b):
            ratio = float(np.median(a) / np.median(b))
            lo, hi = bootstrap_ratio_ci(a, b, confidence=confidence, n_boot=n_boot, seed=seed)
            sig = not (math.isnan(lo) or math.isnan(hi)) and (lo > 1.0 or hi < 1.0)
            out.append(dict(base, ratio=ratio, ci_low=lo, ci_high=hi, significant=sig,
                            widen_by=_needed(ratio, lo, hi), n_samples=int(min(len(a), len(b))),
                            error=None))
        else:
            out.append(dict(base, ratio=math.nan, ci_low=math.nan, ci_high=math.nan,
                            significant=False, widen_by=1.0,
                            error=r.get("aa_error") or "no samples"))
    return pd.DataFrame(out, columns=CONTROL_COLUMNS)


def _needed(ratio: float, lo: float, hi: float) -> float:
    """Factor f >= 1 by which the interval's log half-widths around ``ratio`` must grow for it
    to include 1: interval [1.02, 1.06] around 1.04 -> f = log 1.04 / log(1.04 / 1.02)."""
    if any(math.isnan(x) for x in (ratio, lo, hi)) or ratio <= 0 or lo <= 0:
        return 1.0
    if lo > 1.0 and ratio > lo:
        return max(1.0, math.log(ratio) / math.log(ratio / lo))
    if hi < 1.0 and hi > ratio:
        return max(1.0, -math.log(ratio) / math.log(hi / ratio))
    return 1.0


def widening_factor(controls) -> float:
    """The largest ``widen_by`` of the controls (1.0: every control includes 1, or none ran)."""
    if controls is None or controls.empty:
        return 1.0
    return float(max(1.0, controls["widen_by"].max()))


def widen(sp, factor: float, noise_floor: float | None = None):
    """``sp`` (``analysis.speedups``) with each interval's log half-widths around its speedup
    times ``factor`` (>= 1), ``significant`` and ``verdict`` recomputed, and ``ci_widened_by``
    saying by how much. ``factor`` 1.0 returns the same numbers."""
    from .stats import NOISE_FLOOR, is_significant

    out = sp.copy()
    out["ci_widened_by"] = max(1.0, float(factor))
    if factor <= 1.0 or out.empty:
        return out
    floor = NOISE_FLOOR if noise_floor is None else noise_floor
    ratio = out["speedup"].astype(float)
    out["ci_low"] = ratio * (out["ci_low"].astype(float) / ratio) ** factor
    out["ci_high"] = ratio * (out["ci_high"].astype(float) / ratio) ** factor
    sig = [is_significant(r, lo, hi, floor)
           for r, lo, hi in zip(ratio, out["ci_low"], out["ci_high"])]
    out["significant"] = sig
    out["verdict"] = [(("faster" if r > 1 else "slower") if s else "no difference")
                      if v in ("faster", "slower", "no difference") else v
                      for r, s, v in zip(ratio, sig, out["verdict"])]
    return out


BAND_KEYS = ["framework", "device", "mode", "pairing"]
BAND_COLUMNS = [*BAND_KEYS, "n_controls", "n_significant", "ratio", "band_low", "band_high"]


def aa_bands(controls):
    """Where identical programs landed in this run, one row per kind of control (framework,
    device, mode, pairing) over the groups that carried one: ``ratio`` the median of their
    ratios, ``band_low``/``band_high`` the lowest and highest bound of their intervals (every
    group's own interval inside it), ``n_significant`` how many excluded 1. A JIT mode that
    compiled nothing (the same program as its baseline) should land inside its band."""
    pd = _pd()
    ok = controls[controls["error"].isna()] if not controls.empty else controls
    if ok.empty:
        return pd.DataFrame([], columns=BAND_COLUMNS)
    out = ok.groupby(BAND_KEYS, dropna=False).agg(
        n_controls=("ratio", "size"), n_significant=("significant", "sum"),
        ratio=("ratio", "median"), band_low=("ci_low", "min"), band_high=("ci_high", "max"))
    return out.reset_index()[BAND_COLUMNS]


def in_band(bands, framework: str, device: str, baseline: str, ratio: float) -> bool | None:
    """Whether ``ratio`` (a mode against ``baseline``) lies inside the A/A band of
    ``baseline`` timed against itself, of ``framework`` on ``device``; None when the run has
    no such control (then nothing says what identical programs look like against it)."""
    if bands is None or bands.empty:
        return None
    b = bands[(bands["framework"] == framework) & (bands["device"] == device)
              & (bands["mode"] == baseline)]
    if b.empty or math.isnan(ratio):
        return None
    return bool(b["band_low"].min() <= ratio <= b["band_high"].max())
