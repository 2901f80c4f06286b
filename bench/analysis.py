"""Analysis: pure functions from result DataFrames (``bench.results.load_results``) to
DataFrames. Nothing here prints, plots or reads files; ``bench.report`` renders what this returns.

Definitions used everywhere (the report quotes them):

- **speedup** of a JIT-on mode against a JIT-off baseline of the same case = baseline median /
  JIT median of the per-call time (> 1: JIT is faster). Its 95% interval is a percentile
  bootstrap of that ratio of medians, resampling each mode's raw ``samples`` independently.
  A speedup is *significant* only when the interval excludes 1 **and** the change exceeds the
  noise floor (default 2%).
- **compile cost** of a mode = first call − steady-state (median) call.
- **amortized cost** of the first N calls = first call + the measured calls 2..5 + the median
  for every further call. **Break-even calls** = the smallest N from which JIT's total stays at
  or below the baseline's: ``ceil(extra compile cost / (baseline − JIT) per call)`` when calls
  2..5 run at the median. The baseline's own first-call cost (``tf.function`` tracing, JAX
  op-by-op compilation) counts on its side. ``inf`` ("never") when JIT is not faster per call.
- **geomean** speedup per framework, device and pair of modes, over cases where both modes
  matched the float64 reference; the excluded cases are counted, never silently dropped.
- **crossover size**: where the speedup crosses 1 as the work per call grows (sizes are ordered
  by the FLOPs of one call, never by their label).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .modes import MODES, baselines_for

CASE_KEYS = ["run_id", "workload", "variant", "size", "dtype", "framework", "device"]
# what identifies a row across runs (compare): the case without its run, plus the mode
ROW_KEYS = ["workload", "variant", "size", "dtype", "framework", "device", "mode"]

NOISE_FLOOR = 0.02  # a speedup inside ±2% is "no difference" whatever its interval says
CONFIDENCE = 0.95
N_BOOT = 2000

# The JIT-off mode that differs from each JIT mode by the JIT switch alone: TF's
# tf.function(jit_compile=True) against tf.function; JAX's jax.jit against op-by-op.
# The headline tiles use these pairs; every other pair is in the tables.
NEAREST_BASELINE = {"tf": "graph", "jax": "eager"}

# Per-row noise verdict thresholds: relative IQR of the samples, CPU steal while it ran.
QUIET_REL_IQR, NOISY_REL_IQR = 0.10, 0.25
QUIET_STEAL_PCT, NOISY_STEAL_PCT = 1.0, 5.0
FEW_SAMPLES = 10

# A mode whose dispatch floor is above this share of its median is "dispatch-bound": its time
# says more about the framework's per-call overhead than about the computation.
DISPATCH_BOUND_SHARE = 0.5


def _pd():
    import pandas as pd

    return pd


def _num(v) -> float:
    """A float, NaN for missing values (None, NaN, strings that are not numbers)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _samples(v) -> np.ndarray:
    if isinstance(v, (list, tuple, np.ndarray)):
        a = np.asarray(v, dtype=float)
        return a[np.isfinite(a)]
    return np.zeros(0)


def _calls(v) -> list[float]:
    if isinstance(v, (list, tuple, np.ndarray)):
        return [float(x) for x in v if x is not None and math.isfinite(float(x))]
    return []


def _median(row: Mapping[str, Any]) -> float:
    m = _num(row.get("median_s"))
    if math.isnan(m):
        s = _samples(row.get("samples"))
        m = float(np.median(s)) if s.size else math.nan
    return m


# --------------------------------------------------------------------------- statistics

def bootstrap_ratio_ci(numerator: Sequence[float], denominator: Sequence[float], *,
                       confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of median(numerator) / median(denominator).

    Each sample set is resampled on its own (the modes' samples are not paired). With fewer
    than 2 samples on either side there is no interval: ``(nan, nan)``. Deterministic for a
    given ``seed``.
    """
    a, b = _samples(numerator), _samples(denominator)
    if a.size < 2 or b.size < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, size=(n_boot, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(n_boot, b.size))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ratios, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


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
    med, iqr = _median(row), _num(row.get("iqr_s"))
    s = _samples(row.get("samples"))
    if math.isnan(iqr) and s.size >= 2:
        q1, q3 = np.percentile(s, [25, 75])
        iqr = float(q3 - q1)
    rel = iqr / med if med and med > 0 and not math.isnan(iqr) else math.nan
    steal = _num(row.get("cpu_steal_pct"))
    n = int(s.size)
    if not n and not math.isnan(_num(row.get("n_samples"))):
        n = int(_num(row.get("n_samples")))
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
    if _truthy(row.get("steady_state_compiles")):
        level = 2
        reasons.append("still compiling in timed samples")
    if math.isnan(rel) and math.isnan(steal) and not n:
        return "n/a", "no samples"
    return ("quiet", "some noise", "noisy")[level], "; ".join(reasons)


def _truthy(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return v != 0
    return False


def amortized_cost(first_call_s: float, early_calls_s: Sequence[float], median_s: float,
                   n_calls) -> np.ndarray:
    """Total seconds of the first N calls (vectorised over ``n_calls`` ≥ 1): the first call,
    then the measured calls 2..k+1, then the median for every further call."""
    n = np.asarray(n_calls, dtype=float)
    early = np.asarray(_calls(early_calls_s), dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(early)])  # cum[j] = sum of the first j early calls
    j = np.clip(n - 1, 0, early.size).astype(int)
    return first_call_s + cum[j] + np.maximum(n - 1 - early.size, 0) * median_s


def break_even_calls(on: Mapping[str, Any], off: Mapping[str, Any]) -> float:
    """Smallest N from which the JIT mode's total time of N calls stays ≤ the baseline's.

    ``on`` / ``off`` carry first_call_s, early_calls_s (optional) and median_s. Returns 1.0 when
    JIT is never behind, ``inf`` when it is not faster per call, NaN when a time is missing.
    """
    f_on, f_off = _num(on.get("first_call_s")), _num(off.get("first_call_s"))
    t_on, t_off = _median(on), _median(off)
    if any(math.isnan(x) for x in (f_on, f_off, t_on, t_off)):
        return math.nan
    if t_on >= t_off:
        return math.inf
    e_on, e_off = _calls(on.get("early_calls_s")), _calls(off.get("early_calls_s"))
    k = 1 + max(len(e_on), len(e_off))  # from call k on, both totals grow linearly

    def diff(n):  # JIT total − baseline total after n calls
        return (amortized_cost(f_on, e_on, t_on, n) - amortized_cost(f_off, e_off, t_off, n))

    d_k = float(diff(k))
    if d_k > 0:
        # behind at call k; catches up by (t_off - t_on) per call
        return float(k + math.ceil(d_k / (t_off - t_on) - 1e-12))
    n = k
    while n > 1 and float(diff(n - 1)) <= 0:
        n -= 1
    return float(n)


# --------------------------------------------------------------------------- speedups

def _case_groups(df):
    ok = df[df["status"] == "ok"]
    for keys, g in ok.groupby(CASE_KEYS, dropna=False, sort=False):
        yield dict(zip(CASE_KEYS, keys)), {r["mode"]: r for r in g.to_dict("records")}


def speedups(df, *, noise_floor: float = NOISE_FLOOR, confidence: float = CONFIDENCE,
             n_boot: int = N_BOOT, seed: int = 0):
    """One row per (case, JIT-on mode, JIT-off baseline) where both measured ``ok``.

    Columns: CASE_KEYS, mode, baseline, jit_median_s, baseline_median_s, speedup, ci_low,
    ci_high, significant, verdict ("faster" | "slower" | "no difference"), jit_first_call_s,
    baseline_first_call_s, compile_cost_s, baseline_compile_cost_s, break_even_calls,
    flops, interleaved (the two modes were measured sample by sample in one process),
    nearest (this is the NEAREST_BASELINE pair), noise (the worse of the two verdicts).
    ``break_even_calls`` is only given where JIT is significantly faster; ``inf`` where it is
    significantly slower ("never"), NaN where there is no significant difference ("unclear").
    Rows with status ``mismatch`` never get a speedup: a wrong answer is not a speedup.
    """
    pd = _pd()
    out = []
    for keys, by_mode in _case_groups(df):
        framework = keys["framework"]
        for mode, r in by_mode.items():
            spec = MODES.get((framework, mode))
            if spec is None or not spec.jit:
                continue
            for base in baselines_for(framework):
                b = by_mode.get(base)
                if b is None:
                    continue
                t_on, t_off = _median(r), _median(b)
                if not (t_on > 0 and t_off > 0):
                    continue
                ratio = t_off / t_on
                lo, hi = bootstrap_ratio_ci(_samples(b.get("samples")),
                                            _samples(r.get("samples")),
                                            confidence=confidence, n_boot=n_boot, seed=seed)
                sig = is_significant(ratio, lo, hi, noise_floor)
                verdict = ("faster" if ratio > 1 else "slower") if sig else "no difference"
                with_ = r.get("interleaved_with")
                interleaved = isinstance(with_, (list, tuple)) and base in with_
                levels = ["n/a", "quiet", "some noise", "noisy"]
                noise = max(noise_verdict(r)[0], noise_verdict(b)[0], key=levels.index)
                f_on, f_off = _num(r.get("first_call_s")), _num(b.get("first_call_s"))
                out.append(dict(
                    keys, mode=mode, baseline=base, jit_median_s=t_on, baseline_median_s=t_off,
                    speedup=ratio, ci_low=lo, ci_high=hi, significant=sig, verdict=verdict,
                    jit_first_call_s=f_on, baseline_first_call_s=f_off,
                    compile_cost_s=f_on - t_on, baseline_compile_cost_s=f_off - t_off,
                    break_even_calls=(break_even_calls(r, b) if verdict == "faster" else
                                      math.inf if verdict == "slower" else math.nan),
                    flops=_num(r.get("flops")),
                    interleaved=interleaved, nearest=NEAREST_BASELINE.get(framework) == base,
                    noise=noise))
    cols = CASE_KEYS + ["mode", "baseline", "jit_median_s", "baseline_median_s", "speedup",
                        "ci_low", "ci_high", "significant", "verdict", "jit_first_call_s",
                        "baseline_first_call_s", "compile_cost_s", "baseline_compile_cost_s",
                        "break_even_calls", "flops", "interleaved", "nearest", "noise"]
    return pd.DataFrame(out, columns=cols)


def geomean_speedups(sp, df):
    """Geomean speedup per (framework, device, mode, baseline) over the cases where both modes
    passed correctness, with the counts of included and excluded cases.

    A case is *excluded* when the JIT mode or the baseline has a row that is not ``ok``
    (mismatch, compile error, crash, timeout, ...; ``skipped`` rows count apart as
    ``n_skipped``). Columns: framework, device, mode, baseline, geomean, n_included,
    n_excluded, n_skipped, n_faster, n_slower, n_same, min_speedup, max_speedup, nearest.
    """
    pd = _pd()
    case_cols = [c for c in CASE_KEYS if c not in ("framework", "device")]
    out = []
    for (framework, device), g in df.groupby(["framework", "device"], sort=True, dropna=False):
        for mode in sorted(set(g["mode"])):
            spec = MODES.get((framework, mode))
            if spec is None or not spec.jit:
                continue
            for base in baselines_for(framework):
                if base not in set(g["mode"]):
                    continue
                pair = g[g["mode"].isin([mode, base])]
                n_excl = n_skip = 0
                for _, c in pair.groupby(case_cols, dropna=False, sort=False):
                    statuses = dict(zip(c["mode"], c["status"]))
                    if statuses.get(mode) == "ok" and statuses.get(base) == "ok":
                        continue
                    if "skipped" in statuses.values():
                        n_skip += 1
                    else:
                        n_excl += 1
                s = sp[(sp["framework"] == framework) & (sp["device"] == device)
                       & (sp["mode"] == mode) & (sp["baseline"] == base)]
                v = s["verdict"]
                out.append(dict(
                    framework=framework, device=device, mode=mode, baseline=base,
                    geomean=geomean(s["speedup"]), n_included=len(s), n_excluded=n_excl,
                    n_skipped=n_skip, n_faster=int((v == "faster").sum()),
                    n_slower=int((v == "slower").sum()), n_same=int((v == "no difference").sum()),
                    min_speedup=float(s["speedup"].min()) if len(s) else math.nan,
                    max_speedup=float(s["speedup"].max()) if len(s) else math.nan,
                    nearest=NEAREST_BASELINE.get(framework) == base))
    cols = ["framework", "device", "mode", "baseline", "geomean", "n_included", "n_excluded",
            "n_skipped", "n_faster", "n_slower", "n_same", "min_speedup", "max_speedup",
            "nearest"]
    return pd.DataFrame(out, columns=cols)


# --------------------------------------------------------------------------- sizes

def _params_work(params) -> float:
    if isinstance(params, Mapping):
        nums = [float(v) for v in params.values()
                if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if nums:
            return float(np.prod(nums))
    return math.nan


def size_order(df):
    """Work per call of each (workload, variant, size): the row's ``flops``, else the product of
    its numeric params. Columns: workload, variant, size, work, rank (0 = smallest)."""
    pd = _pd()
    rows = {}
    for r in df.to_dict("records"):
        key = (r["workload"], r.get("variant"), r["size"])
        w = _num(r.get("flops"))
        if math.isnan(w) or w <= 0:
            w = _params_work(r.get("params"))
        if key not in rows or (math.isnan(rows[key]) and not math.isnan(w)):
            rows[key] = w
    out = pd.DataFrame([dict(workload=k[0], variant=k[1], size=k[2], work=v)
                        for k, v in rows.items()],
                       columns=["workload", "variant", "size", "work"])
    out["rank"] = (out.sort_values(["work", "size"]).groupby(["workload", "variant"])
                   .cumcount())
    return out.sort_values(["workload", "variant", "rank"]).reset_index(drop=True)


SERIES_KEYS = ["workload", "variant", "dtype", "framework", "device", "mode", "baseline"]


def crossovers(sp, order=None):
    """Where the speedup crosses 1 as the size grows, per SERIES_KEYS.

    ``order`` is ``size_order(df)``; without it, sizes are ordered by ``sp.flops``. Columns:
    SERIES_KEYS, n_sizes, sizes (smallest first), speedups, signs (+1 significantly faster,
    -1 slower, 0 no significant difference), crossover (bool), n_crossings (flips of the
    significant verdict), below_size / above_size (the sizes either side of the first
    crossing), crossover_work
    (log-log interpolated work per call where the speedup is 1), direction
    ("JIT wins above" | "JIT wins below"), summary (one sentence).
    """
    pd = _pd()
    sp = sp.drop(columns=["work"], errors="ignore")
    if order is not None and len(order):
        sp = sp.merge(order[["workload", "variant", "size", "work"]],
                      on=["workload", "variant", "size"], how="left")
    else:
        sp["work"] = sp["flops"]
    sp["sign"] = sp["verdict"].map({"faster": 1, "slower": -1}).fillna(0).astype(int)
    out = []
    for keys, g in sp.groupby(SERIES_KEYS, sort=True, dropna=False):
        g = g.groupby("size", sort=False).agg(
            work=("work", "first"), speedup=("speedup", geomean),
            # a size counts as faster/slower only when every run of it says so
            sign=("sign", lambda x: int(x.iloc[0]) if len(set(x)) == 1 else 0)).reset_index()
        g = g.sort_values(["work", "size"])
        sizes, work, s = list(g["size"]), list(g["work"]), list(g["speedup"])
        signs = list(g["sign"])
        rec = dict(zip(SERIES_KEYS, keys), n_sizes=len(sizes), sizes=sizes, speedups=s,
                   signs=signs, crossover=False, n_crossings=0, below_size=None,
                   above_size=None, crossover_work=math.nan, direction=None)
        # a crossing: the significant verdict flips between two sizes (sizes with no
        # significant difference in between are skipped, not counted as crossings)
        sig = [i for i in range(len(s)) if signs[i] != 0]
        crossings = [(i, j) for i, j in zip(sig, sig[1:]) if signs[i] != signs[j]]
        if crossings:
            i, j = crossings[0]
            rec.update(crossover=True, n_crossings=len(crossings), below_size=sizes[i],
                       above_size=sizes[j],
                       direction="JIT wins above" if signs[j] > 0 else "JIT wins below")
            w0, w1 = work[i], work[j]
            if w0 > 0 and w1 > 0:
                l0, l1 = math.log(s[i]), math.log(s[j])
                t = l0 / (l0 - l1)  # where the log-speedup line crosses 0
                rec["crossover_work"] = math.exp(math.log(w0) + t * (math.log(w1) - math.log(w0)))
        rec["summary"] = _crossover_sentence(rec)
        out.append(rec)
    cols = SERIES_KEYS + ["n_sizes", "sizes", "speedups", "signs", "crossover", "n_crossings",
                          "below_size", "above_size", "crossover_work", "direction", "summary"]
    return pd.DataFrame(out, columns=cols)


def _crossover_sentence(r: Mapping[str, Any]) -> str:
    if r["n_sizes"] < 2:
        return "one size measured: no crossover to find"
    if r["crossover"]:
        where = f"between {r['below_size']} and {r['above_size']}"
        if not math.isnan(r["crossover_work"]):
            where += f" (≈{r['crossover_work']:.3g} FLOP per call)"
        extra = f"; it crosses {r['n_crossings']} times" if r["n_crossings"] > 1 else ""
        return f"{r['direction']}: speedup crosses 1 {where}{extra}"
    signs = r["signs"]
    n_same = sum(1 for x in signs if x == 0)
    tail = f" ({n_same} of {len(signs)} sizes: no significant difference)" if n_same else ""
    if signs and all(x >= 0 for x in signs) and any(signs):
        return "JIT faster at every size where the difference is significant" + tail \
            if n_same else "JIT faster at every size measured"
    if signs and all(x <= 0 for x in signs) and any(signs):
        return "JIT slower at every size where the difference is significant" + tail \
            if n_same else "JIT slower at every size measured"
    return "no significant difference at any size"


# --------------------------------------------------------------------------- calibration

def calibration_frames(calibration: Mapping[str, Any] | None):
    """(peaks, floors) DataFrames from ``meta["calibration"]``; empty frames when absent.

    peaks: source, framework, mode, device, gflops (fastest call), gflops_median, min_s,
    median_s, status, error.
    floors: framework, mode, device, floor_s, status ("ok" | "derived" | failure), note.
    """
    pd = _pd()
    cal = calibration or {}
    peaks = pd.DataFrame(list(cal.get("peak", [])),
                         columns=["source", "framework", "mode", "device", "gflops",
                                  "gflops_median", "min_s", "median_s", "status", "error"])
    floors = pd.DataFrame(list(cal.get("dispatch", [])),
                          columns=["framework", "mode", "device", "floor_s", "status", "note"])
    for f in (peaks, floors):
        for c in f.columns:
            if c in ("gflops", "gflops_median", "min_s", "median_s", "floor_s"):
                f[c] = pd.to_numeric(f[c], errors="coerce")
    return peaks, floors


def peak_gflops(calibration: Mapping[str, Any] | None):
    """Best measured float32 matmul GFLOP/s per device: the max over numpy and every framework
    mode. Columns: device, peak_gflops, peak_source."""
    pd = _pd()
    peaks, _ = calibration_frames(calibration)
    ok = peaks[(peaks["status"] == "ok") & (peaks["gflops"] > 0)]
    out = []
    for device, g in ok.groupby("device", sort=True):
        best = g.loc[g["gflops"].idxmax()]
        src = best["source"] if best["source"] == "numpy" else f"{best['framework']} " \
                                                                f"{best['mode']}"
        out.append(dict(device=device, peak_gflops=float(best["gflops"]), peak_source=src))
    return pd.DataFrame(out, columns=["device", "peak_gflops", "peak_source"])


def efficiency(df, calibration: Mapping[str, Any] | None):
    """Per result row: achieved GFLOP/s, its fraction of the device's measured matmul peak,
    the mode's dispatch floor and the share of the median it accounts for.

    Columns: ROW_KEYS, gflops, peak_gflops, fraction_of_peak, dispatch_floor_s, floor_share,
    dispatch_bound. The float32 peak is used for every dtype (float64 rows read against it).
    """
    pd = _pd()
    peaks = peak_gflops(calibration)
    _, floors = calibration_frames(calibration)
    floors = floors[floors["status"].isin(["ok", "derived"])]
    peak_of = dict(zip(peaks["device"], peaks["peak_gflops"]))
    floor_of = {(r["framework"], r["mode"], r["device"]): r["floor_s"]
                for r in floors.to_dict("records")}
    out = []
    for r in df.to_dict("records"):
        med = _median(r)
        gf = _num(r.get("gflops"))
        if math.isnan(gf) and med > 0 and _num(r.get("flops")) > 0:
            gf = _num(r.get("flops")) / med / 1e9
        peak = peak_of.get(r["device"], math.nan)
        floor = _num(floor_of.get((r["framework"], r["mode"], r["device"])))
        share = floor / med if med > 0 and not math.isnan(floor) else math.nan
        out.append(dict({k: r.get(k) for k in ROW_KEYS}, run_id=r.get("run_id"), gflops=gf,
                        peak_gflops=peak,
                        fraction_of_peak=gf / peak if peak > 0 and not math.isnan(gf)
                        else math.nan,
                        dispatch_floor_s=floor, floor_share=share,
                        dispatch_bound=bool(share > DISPATCH_BOUND_SHARE)))
    cols = ["run_id"] + ROW_KEYS + ["gflops", "peak_gflops", "fraction_of_peak",
                                    "dispatch_floor_s", "floor_share", "dispatch_bound"]
    return pd.DataFrame(out, columns=cols)


def row_facts(df, calibration: Mapping[str, Any] | None = None):
    """``df`` plus, per row: compile_cost_s (first call − median), noise, noise_reason, and
    the ``efficiency`` columns. Same index and order as ``df``."""
    df = df.copy()
    med = np.asarray([_median(r) for r in df.to_dict("records")], dtype=float)
    df["compile_cost_s"] = df["first_call_s"].to_numpy(dtype=float) - med
    verdicts = [noise_verdict(r) for r in df.to_dict("records")]
    df["noise"] = [v[0] for v in verdicts]
    df["noise_reason"] = [v[1] for v in verdicts]
    eff = efficiency(df, calibration)
    for c in ("peak_gflops", "fraction_of_peak", "dispatch_floor_s", "floor_share",
              "dispatch_bound"):
        df[c] = eff[c].to_numpy() if len(eff) else []
    return df


# --------------------------------------------------------------------------- amortized

def amortized_curves(df, sp, n_calls: Sequence[int] | None = None):
    """Amortized cost of the first N calls of every mode that has a speedup row, per case.

    Long format: CASE_KEYS, mode, jit, n_calls, total_s, per_call_s (= total_s / n_calls).
    ``n_calls`` defaults to a log grid from 1 to 10× the largest finite break-even (≥ 1000).
    """
    pd = _pd()
    if n_calls is None:
        be = sp["break_even_calls"] if len(sp) else pd.Series(dtype=float)
        be = be[np.isfinite(be)]
        top = max(1000.0, 10.0 * float(be.max())) if len(be) else 1000.0
        n_calls = np.unique(np.round(np.logspace(0, math.log10(top), 60)).astype(int))
    n = np.asarray(n_calls, dtype=float)
    out = []
    wanted = set()
    for r in sp.to_dict("records"):
        key = tuple(r[k] for k in CASE_KEYS)
        wanted.add(key + (r["mode"],))
        wanted.add(key + (r["baseline"],))
    for r in df[df["status"] == "ok"].to_dict("records"):
        key = tuple(r[k] for k in CASE_KEYS) + (r["mode"],)
        if key not in wanted:
            continue
        f, t = _num(r.get("first_call_s")), _median(r)
        if math.isnan(f) or math.isnan(t):
            continue
        total = amortized_cost(f, r.get("early_calls_s"), t, n)
        for ni, ti in zip(n, total):
            out.append(dict(zip(CASE_KEYS, key[:-1]), mode=r["mode"],
                            jit=MODES[(r["framework"], r["mode"])].jit
                            if (r["framework"], r["mode"]) in MODES else None,
                            n_calls=int(ni), total_s=float(ti), per_call_s=float(ti / ni)))
    cols = CASE_KEYS + ["mode", "jit", "n_calls", "total_s", "per_call_s"]
    return pd.DataFrame(out, columns=cols)


# --------------------------------------------------------------------------- headline

def summary(df, sp) -> dict[str, Any]:
    """The numbers of the headline tiles: pass rate, median compile cost of the JIT modes,
    median break-even calls of the nearest pairs where JIT is significantly faster (and how
    many never pay off, and how many show no significant difference)."""
    skipped = int((df["status"] == "skipped").sum())
    measured = len(df) - skipped
    ok = int((df["status"] == "ok").sum())
    jit_rows = df[(df["status"] == "ok") & df["jit"].map(_truthy)]
    cc = [_num(r.get("first_call_s")) - _median(r) for r in jit_rows.to_dict("records")]
    cc = [c for c in cc if not math.isnan(c)]
    near = sp[sp["nearest"]] if len(sp) else sp
    be = near["break_even_calls"] if len(near) else np.zeros(0)
    finite = np.asarray([b for b in be if math.isfinite(b)])
    return {
        "n_rows": len(df), "n_ok": ok, "n_measured": measured, "n_skipped": skipped,
        "n_failed": measured - ok,
        "pass_rate": ok / measured if measured else math.nan,
        "median_compile_s": float(np.median(cc)) if len(cc) else math.nan,
        "n_jit_rows": len(jit_rows),
        "median_break_even": float(np.median(finite)) if finite.size else math.nan,
        "n_break_even": int(finite.size), "n_never": int(sum(1 for b in be if b == math.inf)),
        "n_unclear": int(sum(1 for b in be if isinstance(b, float) and math.isnan(b))),
        "n_pairs": len(near),
        "status_counts": df["status"].value_counts().to_dict(),
    }


# --------------------------------------------------------------------------- compare

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
            "spread": 1.4826 * float(np.median(np.abs(x - med)))}


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
    pd = _pd()

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
            ma, mb = _median(ra), _median(rb)
            lo, hi = bootstrap_ratio_ci(_samples(rb.get("samples")), _samples(ra.get("samples")),
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
