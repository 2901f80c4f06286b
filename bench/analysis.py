"""Analysis: pure DataFrame -> DataFrame functions. Nothing here prints or plots."""

from __future__ import annotations

from .modes import MODES, baselines_for

CASE_KEYS = ["run_id", "workload", "variant", "size", "dtype", "framework", "device"]


def speedups(df):
    """One row per (case, JIT-on mode, JIT-off baseline) where both measured fine.

    speedup = baseline median / JIT median (> 1: JIT is faster). Columns: CASE_KEYS + mode,
    baseline, jit_median_s, baseline_median_s, speedup, jit_first_call_s.
    """
    import pandas as pd

    ok = df[df["status"] == "ok"]
    out = []
    for keys, g in ok.groupby(CASE_KEYS, dropna=False, sort=False):
        by_mode = {r["mode"]: r for _, r in g.iterrows()}
        framework = keys[CASE_KEYS.index("framework")]
        for mode, r in by_mode.items():
            spec = MODES.get((framework, mode))
            if spec is None or not spec.jit:
                continue
            for base in baselines_for(framework):
                b = by_mode.get(base)
                if b is None or not r["median_s"] or not b["median_s"]:
                    continue
                out.append(dict(zip(CASE_KEYS, keys), mode=mode, baseline=base,
                                jit_median_s=r["median_s"], baseline_median_s=b["median_s"],
                                speedup=b["median_s"] / r["median_s"],
                                jit_first_call_s=r["first_call_s"]))
    cols = CASE_KEYS + ["mode", "baseline", "jit_median_s", "baseline_median_s", "speedup",
                        "jit_first_call_s"]
    return pd.DataFrame(out, columns=cols)
