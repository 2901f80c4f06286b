"""Speedups of every JIT-on mode against every JIT-off baseline of the same case, and their
geomeans per framework, device and pair."""

from __future__ import annotations

import math

from jitbench.analysis.costs import break_even_calls
from jitbench.analysis.stats import (
    CONFIDENCE,
    N_BOOT,
    NOISE_FLOOR,
    bootstrap_ratio_ci,
    geomean,
    is_significant,
    noise_verdict,
)
from jitbench.analysis.values import (CASE_KEYS, as_number, group_records, pandas_module,
                                      row_median, samples_array)
from jitbench.define.modes import FRAMEWORKS, MODES, baselines_for, modes_for, nearest_baseline

# the verdict of a JIT-on row whose framework says it compiled nothing (``jit_happened`` False,
# e.g. TF auto-clustering that formed no cluster): the same program as its baseline, not a
# speedup; the geomean counts these apart (n_no_jit)
NO_JIT = "no JIT happened"


def is_nearest(framework, baseline) -> bool:
    """``baseline`` is the JIT-off mode that differs from the framework's JIT modes by the JIT
    switch alone (``jitbench.define.modes.nearest_baseline``); the headline tiles use these
    pairs."""
    return framework in FRAMEWORKS and nearest_baseline(framework) == baseline


def _case_groups(df):
    """(case keys, {mode: row}) per case of the ``ok`` rows, in order of appearance."""
    for rs in group_records(df[df["status"] == "ok"].to_dict("records"), CASE_KEYS).values():
        yield {k: rs[0][k] for k in CASE_KEYS}, {r["mode"]: r for r in rs}


def _pairs(df):
    """(case keys, JIT mode, its row, baseline, its row) for every pair :func:`speedups`
    compares: both ``ok``, both with a median time above 0."""
    for keys, by_mode in _case_groups(df):
        framework = keys["framework"]
        for mode, r in by_mode.items():
            spec = MODES.get((framework, mode))
            if spec is None or not spec.jit:
                continue
            for base in baselines_for(framework):
                b = by_mode.get(base)
                if b is not None and row_median(r) > 0 and row_median(b) > 0:
                    yield keys, mode, r, base, b


def _block_verdict(r, base: str) -> tuple[float, float, float, str] | None:
    """(speedup, low, high, verdict) the worker judged from the blocks for this JIT row
    against ``base``: its verdict against its nearest baseline, or one of its
    ``pair_verdicts`` (the other JIT-off modes, judged from the same blocks at the end); None
    where it has none (an older row, a pytest-benchmark import, too few units)."""
    if r.get("verdict_baseline") == base:
        v = {k: r.get(f"verdict_{k}") for k in ("speedup", "ci_low", "ci_high")}
        v["verdict"] = r.get("verdict")
    else:
        pairs = r.get("pair_verdicts")
        v = pairs.get(base) if isinstance(pairs, dict) else None
        if not isinstance(v, dict):
            return None
    lo, hi, speedup = (as_number(v.get(k)) for k in ("ci_low", "ci_high", "speedup"))
    if not (lo > 0 and hi > 0 and speedup > 0) or not isinstance(v.get("verdict"), str):
        return None
    return speedup, lo, hi, v["verdict"]


def speedups(df, *, noise_floor: float = NOISE_FLOOR, confidence: float = CONFIDENCE,
             n_boot: int = N_BOOT, seed: int = 0):
    """One row per (case, JIT-on mode, JIT-off baseline) where both measured ``ok``.

    Columns: CASE_KEYS, mode, baseline, jit_median_s, baseline_median_s, speedup, ci_low,
    ci_high, significant, verdict ("faster" | "slower" | "no difference" | :data:`NO_JIT`),
    jit_first_call_s,
    baseline_first_call_s, compile_cost_s, baseline_compile_cost_s, break_even_calls,
    flops, interleaved (the two modes were measured sample by sample in one process),
    nearest (``is_nearest``: the headline pair), noise (the worse of the two verdicts),
    interval_from: "blocks" where the row carries the worker's sequential verdict against this
    baseline (speedup, interval and verdict faster | slower | same | unresolved taken from
    it: ``jitbench.protocol.sequential``), else "samples" (bootstrap of the samples; verdict
    faster | slower | no difference).
    ``break_even_calls`` is only given where JIT is significantly faster; ``inf`` where it is
    significantly slower ("never"), NaN where there is no significant difference ("unclear").
    Rows with status ``mismatch`` never get a speedup: a wrong answer is not a speedup.
    """
    pd = pandas_module()
    out = []
    for keys, mode, r, base, b in _pairs(df):
        framework = keys["framework"]
        t_on, t_off = row_median(r), row_median(b)
        ratio = t_off / t_on
        judged = _block_verdict(r, base)
        blocks = judged is not None
        if blocks:  # the worker's sequential verdict: blocks and builds (protocol.sequential)
            ratio, lo, hi, verdict = judged
            sig = verdict in ("faster", "slower")
        else:
            lo, hi = bootstrap_ratio_ci(samples_array(b.get("samples")),
                                        samples_array(r.get("samples")),
                                        confidence=confidence, n_boot=n_boot, seed=seed)
            sig = is_significant(ratio, lo, hi, noise_floor)
            verdict = ("faster" if ratio > 1 else "slower") if sig else "no difference"
        if r.get("jit_happened") is False:
            sig, verdict = False, NO_JIT
        with_ = r.get("interleaved_with")
        interleaved = isinstance(with_, (list, tuple)) and base in with_
        levels = ["n/a", "quiet", "some noise", "noisy"]
        noise = max(noise_verdict(r)[0], noise_verdict(b)[0], key=levels.index)
        f_on, f_off = as_number(r.get("first_call_s")), as_number(b.get("first_call_s"))
        out.append(dict(
            keys, mode=mode, baseline=base, jit_median_s=t_on, baseline_median_s=t_off,
            speedup=ratio, ci_low=lo, ci_high=hi, significant=sig, verdict=verdict,
            jit_first_call_s=f_on, baseline_first_call_s=f_off,
            compile_cost_s=f_on - t_on, baseline_compile_cost_s=f_off - t_off,
            break_even_calls=(break_even_calls(r, b) if verdict == "faster" else
                              math.inf if verdict == "slower" else math.nan),
            flops=as_number(r.get("flops")),
            interleaved=interleaved, nearest=is_nearest(framework, base),
            noise=noise, interval_from="blocks" if blocks else "samples"))
    cols = CASE_KEYS + ["mode", "baseline", "jit_median_s", "baseline_median_s", "speedup",
                        "ci_low", "ci_high", "significant", "verdict", "jit_first_call_s",
                        "baseline_first_call_s", "compile_cost_s", "baseline_compile_cost_s",
                        "break_even_calls", "flops", "interleaved", "nearest", "noise",
                        "interval_from"]
    return pd.DataFrame(out, columns=cols)


def geomean_speedups(sp, df):
    """Geomean speedup per (framework, device, mode, baseline) over the cases where both modes
    passed correctness, with the counts of included and excluded cases.

    A case is *excluded* when the JIT mode has a row that is not ``ok``, or has an ``ok`` one
    and the baseline's row is not ``ok`` (mismatch, compile error, crash, timeout, ...;
    ``skipped`` rows count apart as ``n_skipped``). A case with no row for the JIT mode (e.g.
    ``donate`` on a workload without state, or a mode not asked for) is neither. Columns: framework, device, mode, baseline, geomean, n_included,
    n_excluded, n_skipped, n_faster, n_slower, n_same, min_speedup, max_speedup, nearest,
    n_no_jit (cases where the JIT mode compiled nothing: verdict :data:`NO_JIT`, left out of
    the geomean and of n_included).
    """
    pd = pandas_module()
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
                    on, off = statuses.get(mode), statuses.get(base)
                    # a case without the JIT row (a mode it does not have or was not asked
                    # for), or whose baseline has no row, is not a failure: not counted
                    if on is None or (on == "ok" and off in ("ok", None)):
                        continue
                    if "skipped" in (on, off):
                        n_skip += 1
                    else:
                        n_excl += 1
                s = sp[(sp["framework"] == framework) & (sp["device"] == device)
                       & (sp["mode"] == mode) & (sp["baseline"] == base)]
                n_no_jit = int((s["verdict"] == NO_JIT).sum())
                s = s[s["verdict"] != NO_JIT]
                v = s["verdict"]
                out.append(dict(
                    framework=framework, device=device, mode=mode, baseline=base,
                    geomean=geomean(s["speedup"]), n_included=len(s), n_excluded=n_excl,
                    n_skipped=n_skip, n_faster=int((v == "faster").sum()),
                    n_slower=int((v == "slower").sum()),
                    n_same=int(v.isin(["no difference", "same"]).sum()),
                    min_speedup=float(s["speedup"].min()) if len(s) else math.nan,
                    max_speedup=float(s["speedup"].max()) if len(s) else math.nan,
                    nearest=is_nearest(framework, base), n_no_jit=n_no_jit))
    cols = ["framework", "device", "mode", "baseline", "geomean", "n_included", "n_excluded",
            "n_skipped", "n_faster", "n_slower", "n_same", "min_speedup", "max_speedup",
            "nearest", "n_no_jit"]
    return pd.DataFrame(out, columns=cols)


def why_no_pairs(df) -> str | None:
    """Why :func:`speedups` of ``df`` has no row, in one line a reader acts on; None where it
    has one. Cheap: no bootstrap (a report asks before it draws)."""
    if df.empty:
        return "this run holds no rows"
    if next(_pairs(df), None) is not None:
        return None
    ok = df[df["status"] == "ok"]
    if len(ok) == 0:
        return ("no row ran ok (see Failures): speedups need a JIT-on and a JIT-off mode that "
                "both ran")
    spec = [MODES.get((f, m)) for f, m in zip(ok["framework"], ok["mode"])]
    has_on = any(s is not None and s.jit for s in spec)
    has_off = any(s is not None and not s.jit for s in spec)
    frameworks = sorted({f for f in ok["framework"] if f in FRAMEWORKS}) or list(FRAMEWORKS)

    def named(jit: bool) -> str:
        return " or ".join(f"{'/'.join(m for m in modes_for(fw) if MODES[(fw, m)].jit == jit)}"
                           f" ({fw})" for fw in frameworks)

    if not has_off:
        return f"no JIT-off baseline measured: speedups need one of {named(False)}"
    if not has_on:
        return f"no JIT-on mode measured: speedups need one of {named(True)}"
    return ("no case has a JIT-on and a JIT-off mode that both ran ok: each pair had a "
            "failed or missing side (see Failures)")
