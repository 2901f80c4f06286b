"""Run-to-run comparison: per-row change from run A to run B, and the spread of the whole run."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from jitbench.analysis.stats import (
    CONFIDENCE,
    N_BOOT,
    bootstrap_ratio_ci,
    is_significant,
    noise_verdict,
)
from jitbench.analysis.values import (ROW_KEYS, as_number, pandas_module, row_median,
                                      samples_array)
from jitbench.protocol.timing import robust_sigma

COMPARE_NOISE_FLOOR = 0.05  # a change inside ±5% between two runs is never flagged
MIN_ROWS_FOR_SPREAD = 8  # fewer rows than this: no run-to-run spread can be estimated
# Run-to-run moves are heavy-tailed (a burst of contention slows a few rows a lot), so a row
# must stand out of the spread the way an outlier does: 3 robust standard deviations (the
# Hampel identifier), not the 1.96 of a normal 95% interval.
SPREAD_Z = 3.0


def run_to_run_spread(log_ratios: Sequence[float]) -> dict[str, float]:
    """How two runs differ as a whole, from the log of median_B / median_A of every row.

    ``shift``: the median ratio − 1 (the whole run B faster or slower). ``spread``: a robust
    standard deviation of the log ratios (1.4826 × MAD): how much rows move independently of
    each other when nothing but the machine changed. NaN with fewer than MIN_ROWS_FOR_SPREAD.
    """
    x = np.asarray([v for v in log_ratios if v is not None and math.isfinite(v)], float)
    if x.size < MIN_ROWS_FOR_SPREAD:
        return {"n": int(x.size), "shift": math.nan, "spread": math.nan}
    med = float(np.median(x))
    return {"n": int(x.size), "shift": math.expm1(med),
            "spread": robust_sigma(x, med)}


def compare_runs(a, b, *, noise_floor: float = COMPARE_NOISE_FLOOR,
                 confidence: float = CONFIDENCE, n_boot: int = N_BOOT, seed: int = 0,
                 between_runs: bool = True):
    """Per-row change from run A to run B, matched on ROW_KEYS.

    ratio = median_B / median_A of the per-call time (> 1: B is slower). Its interval has two
    parts, added in quadrature on the log scale:

    - the bootstrap interval of the ratio of medians from both runs' raw samples (what the
      samples of each run say), ``ci_low_samples`` / ``ci_high_samples``;
    - the run-to-run spread (``run_to_run_spread`` of all rows measured ok in both): samples of
      one run cannot show how much a shared machine drifts between runs minutes apart, but
      the rows that moved together show it, SPREAD_Z robust standard deviations of it. Rows
      that all moved alike (a real regression of everything) leave the spread small and are
      flagged; rows that moved every which way (contention) widen every interval.
      ``between_runs=False`` leaves it out.

    *Significant* needs the interval to exclude 1 and the change to exceed ``noise_floor``.
    verdict: "regression" | "improvement" | "unchanged" (both ok); "newly failing" (ok in A,
    not in B); "fixed"; "failing in both"; "skipped"; "only in A"; "only in B".
    Columns: ROW_KEYS, status_a, status_b, median_a_s, median_b_s, ratio, change_pct, ci_low,
    ci_high, ci_low_samples, ci_high_samples, significant, verdict, noise_a, noise_b, error_b.
    """
    pd = pandas_module()

    def index(df):
        out = {}
        for r in df.to_dict("records"):
            out[tuple(r.get(k) for k in ROW_KEYS)] = r
        return out

    ia, ib = index(a), index(b)
    rows = []
    for key in sorted(set(ia) | set(ib), key=lambda k: tuple(str(x) for x in k)):
        ra, rb = ia.get(key), ib.get(key)
        rec = dict(zip(ROW_KEYS, key), status_a=ra.get("status") if ra else None,
                   status_b=rb.get("status") if rb else None, median_a_s=math.nan,
                   median_b_s=math.nan, ratio=math.nan, change_pct=math.nan, ci_low=math.nan,
                   ci_high=math.nan, ci_low_samples=math.nan, ci_high_samples=math.nan,
                   significant=False,
                   noise_a=noise_verdict(ra)[0] if ra else "n/a",
                   noise_b=noise_verdict(rb)[0] if rb else "n/a",
                   error_b=(rb.get("error") if rb else None))
        if ra is None or rb is None:
            rec["verdict"] = "only in B" if ra is None else "only in A"
        elif rec["status_a"] == "ok" and rec["status_b"] == "ok":
            ma, mb = row_median(ra), row_median(rb)
            lo, hi = bootstrap_ratio_ci(samples_array(rb.get("samples")),
                                        samples_array(ra.get("samples")),
                                        confidence=confidence, n_boot=n_boot, seed=seed)
            rec.update(median_a_s=ma, median_b_s=mb, ratio=mb / ma if ma > 0 else math.nan,
                       ci_low_samples=lo, ci_high_samples=hi, verdict="unchanged")
        elif rec["status_a"] == "ok":
            rec["verdict"] = "skipped" if rec["status_b"] == "skipped" else "newly failing"
        elif rec["status_b"] == "ok":
            rec["verdict"] = "skipped" if rec["status_a"] == "skipped" else "fixed"
        elif rec["status_a"] == rec["status_b"] == "skipped":
            rec["verdict"] = "skipped"
        else:
            rec["verdict"] = "failing in both"
        rows.append(rec)

    both = [r for r in rows if r["ratio"] > 0]
    spread = run_to_run_spread([math.log(r["ratio"]) for r in both])["spread"]
    extra = SPREAD_Z * spread if between_runs and math.isfinite(spread) else 0.0
    for r in both:
        c = math.log(r["ratio"])
        lo, hi = r["ci_low_samples"], r["ci_high_samples"]
        if lo > 0 and hi > 0:
            r["ci_low"] = math.exp(c - math.hypot(c - math.log(lo), extra))
            r["ci_high"] = math.exp(c + math.hypot(math.log(hi) - c, extra))
        r["change_pct"] = 100.0 * (r["ratio"] - 1.0)
        r["significant"] = is_significant(r["ratio"], r["ci_low"], r["ci_high"], noise_floor)
        if r["significant"]:
            r["verdict"] = "regression" if r["ratio"] > 1 else "improvement"
    cols = ROW_KEYS + ["status_a", "status_b", "median_a_s", "median_b_s", "ratio",
                       "change_pct", "ci_low", "ci_high", "ci_low_samples", "ci_high_samples",
                       "significant", "verdict", "noise_a", "noise_b", "error_b"]
    return pd.DataFrame(rows, columns=cols)


def compare_drift(cmp) -> dict[str, float]:
    """``run_to_run_spread`` of a ``compare_runs`` table (the rows measured ok in both)."""
    r = cmp["ratio"]
    return run_to_run_spread([math.log(x) for x in r if x > 0])


def regressions_over(cmp, pct: float):
    """Rows of ``compare_runs`` that fail ``--fail-on-regression PCT``: significant regressions
    slower by more than PCT percent, and rows that passed in A and fail in B."""
    slow = (cmp["verdict"] == "regression") & (cmp["change_pct"] > pct)
    return cmp[slow | (cmp["verdict"] == "newly failing")]


PAIR_COLUMNS = [*ROW_KEYS, "baseline", "speedup_a", "speedup_b", "change", "ci_low",
                "ci_high", "verdict", "compiles_a", "compiles_b", "program_changed"]


def compare_pairs(a, b, *, tolerance: float = 0.05):
    """What survives drift between two runs: each JIT pair's speedup (its verdict, measured
    interleaved inside its own run) in A and in B, matched on ROW_KEYS and baseline.

    ``change`` = speedup_B / speedup_A (below 1: JIT lost ground in B). Its interval combines
    the two runs' verdict intervals on the log scale (square root of the sum of the squared
    half-widths, each side its own): a ratio of ratios, so the machine's drift between the runs,
    which moved both modes of a pair alike, cancels. ``verdict``: ``same`` when the interval
    lies inside +-``tolerance``, ``faster`` / ``slower`` (the JIT mode against its baseline, in
    B against A) when it lies beyond 1.00x and not inside the band, else ``unresolved``. Also
    the first-call compile counts of both runs and whether the optimized HLO changed
    (fingerprints)."""
    pd = pandas_module()
    need = [*ROW_KEYS, "verdict_baseline", "verdict_speedup", "verdict_ci_low",
            "verdict_ci_high"]
    if any(c not in a.columns or c not in b.columns for c in need):
        return pd.DataFrame([], columns=PAIR_COLUMNS)

    def pairs(df):
        ok = df[df["verdict_speedup"].astype(float) > 0]
        return {tuple(r[k] for k in ROW_KEYS) + (r["verdict_baseline"],): r
                for r in ok.to_dict("records")}

    pa, pb = pairs(a), pairs(b)
    out = []
    for key in sorted(set(pa) & set(pb), key=str):
        ra, rb = pa[key], pb[key]
        sa, sb = float(ra["verdict_speedup"]), float(rb["verdict_speedup"])
        down_a, up_a = _half_widths(ra, sa)
        down_b, up_b = _half_widths(rb, sb)
        change = sb / sa
        lo = change * math.exp(-math.hypot(up_a, down_b))
        hi = change * math.exp(math.hypot(down_a, up_b))
        if math.isnan(lo) or math.isnan(hi):
            verdict = "unresolved"
        elif 1 - tolerance <= lo and hi <= 1 + tolerance:
            verdict = "same"
        elif lo > 1:
            verdict = "faster"
        elif hi < 1:
            verdict = "slower"
        else:
            verdict = "unresolved"
        fa, fb = ra.get("hlo_fingerprint"), rb.get("hlo_fingerprint")
        changed = (fa != fb) if isinstance(fa, str) and isinstance(fb, str) else None
        out.append(dict(zip(ROW_KEYS, key[:-1]), baseline=key[-1], speedup_a=sa,
                        speedup_b=sb, change=change, ci_low=lo, ci_high=hi, verdict=verdict,
                        compiles_a=ra.get("first_compiles"),
                        compiles_b=rb.get("first_compiles"), program_changed=changed))
    return pd.DataFrame(out, columns=PAIR_COLUMNS)


def _half_widths(r, speedup: float) -> tuple[float, float]:
    """(below, above) log half-widths of a row's verdict interval around its speedup."""
    lo, hi = as_number(r.get("verdict_ci_low")), as_number(r.get("verdict_ci_high"))
    if not (lo > 0 and hi > 0):
        return math.nan, math.nan
    return math.log(speedup / lo), math.log(hi / speedup)
