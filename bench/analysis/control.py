"""How far apart identical programs land in this run: the A/A controls, and what they do to the
speedup intervals.

A worker times its framework's nearest JIT-off mode a second time, built afresh and
interleaved like a JIT mode (``jitbench.run.worker``, fields ``aa_*`` on that mode's row). Its
**ratio** (mode median / control median, read like a speedup) and its bootstrap interval are
what "no difference" looks like today, measured the way real pairs are. With a control in
every group, how far identical programs scatter *between groups* is measured too
(:func:`aa_scatter`), which no group's own bootstrap sees: its samples are taken minutes
apart from the next group's, in another state of the machine. :func:`widen` adds that scatter
to every speedup interval of the framework (never narrowing one). A control whose own interval
excludes 1 is the sign that the bootstrap intervals alone are too narrow.
"""

from __future__ import annotations

import math

import numpy as np

from jitbench.analysis.stats import CONFIDENCE, N_BOOT, bootstrap_ratio_ci
from jitbench.analysis.values import as_number, pandas_module, samples_array, text_or
from jitbench.protocol.timing import robust_sigma

CONTROL_COLUMNS = ["framework", "device", "mode", "workload", "variant", "dtype", "size",
                   "pairing", "ratio", "ci_low", "ci_high", "significant", "verdict",
                   "interval_from", "n_samples", "error"]
SCATTER_Z = 1.96  # the A/A scatter added to an interval: this many robust sigmas
AA_VERDICTS = ("faster", "slower", "same", "unresolved")


def aa_controls(df, *, confidence: float = CONFIDENCE, n_boot: int = N_BOOT, seed: int = 0):
    """One row per A/A control of the run (a row with ``aa_samples`` or ``aa_error``).

    Where the worker judged the control as it judges a JIT pair (``aa_verdict``, from the
    blocks: ``jitbench.protocol.sequential``), its ratio, interval and verdict are that
    judgement's (``interval_from`` "blocks"): the same engine as every pair's verdict, so the
    page's counts agree. Otherwise (rows from before the blocks, a pytest-benchmark import)
    a bootstrap of the samples (``interval_from`` "bootstrap"), verdict faster / slower / same
    by whether its interval excludes 1. ``significant``: the verdict is faster or slower."""
    pd = pandas_module()
    out = []
    has = [c for c in ("aa_samples", "aa_error", "aa_verdict") if c in df.columns]
    if not has:
        return pd.DataFrame([], columns=CONTROL_COLUMNS)
    mask = False
    for c in has:
        mask = mask | df[c].notna()
    for r in df[mask].to_dict("records"):
        base = dict(framework=r.get("framework"), device=r.get("device"), mode=r.get("mode"),
                    workload=r.get("workload"), variant=r.get("variant"), dtype=r.get("dtype"),
                    size=r.get("size"), pairing=r.get("aa_pairing") or "", n_samples=0)
        a, b = samples_array(r.get("samples")), samples_array(r.get("aa_samples"))
        error = text_or(r.get("aa_error")) or None
        verdict = text_or(r.get("aa_verdict")) or None
        if error is None and verdict in AA_VERDICTS:
            lo, hi = as_number(r.get("aa_verdict_ci_low")), as_number(r.get("aa_verdict_ci_high"))
            out.append(dict(base, ratio=as_number(r.get("aa_verdict_speedup")), ci_low=lo,
                            ci_high=hi, significant=verdict in ("faster", "slower"),
                            verdict=verdict, interval_from="blocks",
                            n_samples=int(min(len(a), len(b))), error=None))
        elif error is None and len(a) and len(b):
            ratio = float(np.median(a) / np.median(b))
            lo, hi = bootstrap_ratio_ci(a, b, confidence=confidence, n_boot=n_boot, seed=seed)
            sig = not (math.isnan(lo) or math.isnan(hi)) and (lo > 1.0 or hi < 1.0)
            out.append(dict(base, ratio=ratio, ci_low=lo, ci_high=hi, significant=sig,
                            verdict=("faster" if ratio > 1 else "slower") if sig else "same",
                            interval_from="bootstrap", n_samples=int(min(len(a), len(b))),
                            error=None))
        else:
            out.append(dict(base, ratio=math.nan, ci_low=math.nan, ci_high=math.nan,
                            significant=False, verdict=None, interval_from=None,
                            error=error or "no samples"))
    return pd.DataFrame(out, columns=CONTROL_COLUMNS)


def aa_scatter(controls) -> dict[tuple[str, str], float]:
    """How far identical programs land from 1.00x in this run, per (framework, device): a
    robust sigma of the controls' log ratios around 0 (1.4826 x the median of |log ratio|),
    so one odd group does not set it. {} without controls."""
    if controls is None or controls.empty:
        return {}
    out = {}
    ok = controls[controls["error"].isna() & (controls["ratio"] > 0)]
    for (fw, dev), g in ok.groupby(["framework", "device"]):
        out[(fw, dev)] = robust_sigma(np.log(g["ratio"].astype(float)), 0.0)
    return out


def widen(sp, scatter: dict[tuple[str, str], float], noise_floor: float | None = None,
          z: float = SCATTER_Z):
    """``sp`` (``analysis.speedups``) with each interval's log half-widths grown to
    sqrt(half^2 + (z * sigma)^2), sigma the A/A scatter of the row's framework and device
    (``scatter``: :func:`aa_scatter`'s mapping); ``significant``
    and ``verdict`` recomputed. Adds ``aa_scatter`` (z * sigma as a fraction: "identical
    programs land within +-x%") and ``ci_widened_by`` (new width / old width). Sigma 0 leaves
    a row as it was."""
    from jitbench.analysis.stats import NOISE_FLOOR, is_significant

    out = sp.copy()
    if out.empty:
        out["aa_scatter"], out["ci_widened_by"] = [], []
        return out
    sig = [scatter.get((f, d), 0.0) for f, d in zip(out["framework"], out["device"])]
    ratio = out["speedup"].astype(float).to_numpy()
    lo, hi = out["ci_low"].astype(float).to_numpy(), out["ci_high"].astype(float).to_numpy()
    add = z * np.asarray(sig, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        down, up = np.log(ratio / lo), np.log(hi / ratio)
        new_down, new_up = np.sqrt(down ** 2 + add ** 2), np.sqrt(up ** 2 + add ** 2)
        widened = np.where(down + up > 0, (new_down + new_up) / (down + up), 1.0)
    # intervals from blocks already carry the between-build variance (protocol.sequential)
    from_blocks = (out["interval_from"] == "blocks").to_numpy() if "interval_from" in out \
        else np.zeros(len(out), dtype=bool)
    keep = (add <= 0) | from_blocks
    out["ci_low"] = np.where(keep, lo, ratio * np.exp(-new_down))
    out["ci_high"] = np.where(keep, hi, ratio * np.exp(new_up))
    out["aa_scatter"] = np.expm1(add)
    out["ci_widened_by"] = np.where(keep, 1.0, widened)
    floor = NOISE_FLOOR if noise_floor is None else noise_floor
    significant = [is_significant(r, a, b, floor)
                   for r, a, b in zip(ratio, out["ci_low"], out["ci_high"])]
    out["significant"] = significant
    out["verdict"] = [v if k else (("faster" if r > 1 else "slower") if s else "no difference")
                      if v in ("faster", "slower", "no difference") else v
                      for r, s, v, k in zip(ratio, significant, out["verdict"], keep)]
    out["significant"] = [v in ("faster", "slower") if k else s
                          for s, v, k in zip(significant, out["verdict"], keep)]
    return out


BAND_KEYS = ["framework", "device", "mode", "pairing"]
BAND_COLUMNS = [*BAND_KEYS, "n_controls", "n_significant", "ratio", "band_low", "band_high",
                *(f"n_{v}" for v in AA_VERDICTS)]


def aa_bands(controls):
    """Where identical programs landed in this run, one row per kind of control (framework,
    device, mode, pairing) over the groups that carried one: ``ratio`` the median of their
    ratios, ``band_low``/``band_high`` the lowest and highest bound of their intervals (every
    group's own interval inside it), ``n_significant`` how many were called faster or slower,
    ``n_<verdict>`` how many got each verdict (:data:`AA_VERDICTS`). A JIT mode that
    compiled nothing (the same program as its baseline) should land inside its band."""
    pd = pandas_module()
    ok = controls[controls["error"].isna()] if not controls.empty else controls
    if ok.empty:
        return pd.DataFrame([], columns=BAND_COLUMNS)
    ok = ok.assign(**{f"n_{v}": ok["verdict"].eq(v) for v in AA_VERDICTS})
    out = ok.groupby(BAND_KEYS, dropna=False).agg(
        n_controls=("ratio", "size"), n_significant=("significant", "sum"),
        ratio=("ratio", "median"), band_low=("ci_low", "min"), band_high=("ci_high", "max"),
        **{f"n_{v}": (f"n_{v}", "sum") for v in AA_VERDICTS})
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
