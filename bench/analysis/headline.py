"""Per-row facts for the tables and the numbers of the headline tiles."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitbench.analysis.calibration import efficiency
from jitbench.analysis.roofline import roofline
from jitbench.analysis.stats import noise_verdict
from jitbench.analysis.values import row_median, as_number, truthy


def row_facts(df, calibration: Mapping[str, Any] | None = None):
    """``df`` plus, per row: compile_cost_s (first call − median), noise, noise_reason, the
    ``efficiency`` columns and the ``roofline`` ones (intensity, bound_gflops,
    fraction_of_bound). Same index and order as ``df``."""
    df = df.copy()
    med = np.asarray([row_median(r) for r in df.to_dict("records")], dtype=float)
    df["compile_cost_s"] = df["first_call_s"].to_numpy(dtype=float) - med
    verdicts = [noise_verdict(r) for r in df.to_dict("records")]
    df["noise"] = [v[0] for v in verdicts]
    df["noise_reason"] = [v[1] for v in verdicts]
    eff = efficiency(df, calibration)
    for c in ("peak_gflops", "fraction_of_peak", "dispatch_floor_s", "floor_share",
              "dispatch_bound"):
        df[c] = eff[c].to_numpy() if len(eff) else []
    roof = roofline(df, calibration)  # where the row sits under its roofline
    for c in ("intensity", "bound_gflops", "fraction_of_bound"):
        df[c] = roof[c].to_numpy() if len(roof) else []
    return df


def headline_numbers(df, sp) -> dict[str, Any]:
    """The numbers of the headline tiles: pass rate, median compile cost of the JIT modes,
    median break-even calls of the nearest pairs where JIT is significantly faster (and how
    many never pay off, and how many show no significant difference)."""
    skipped = int((df["status"] == "skipped").sum())
    measured = len(df) - skipped
    ok = int((df["status"] == "ok").sum())
    jit_rows = df[(df["status"] == "ok") & df["jit"].map(truthy)]
    cc = [as_number(r.get("first_call_s")) - row_median(r) for r in jit_rows.to_dict("records")]
    cc = [c for c in cc if not math.isnan(c)]
    near = sp.loc[sp["nearest"]] if len(sp) else sp
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
        "verdict_counts": near["verdict"].value_counts().to_dict() if len(near) else {},
        "aa_verdict_counts": (df["aa_verdict"].dropna().value_counts().to_dict()
                              if "aa_verdict" in df else {}),
        **_group_times(df),
    }


def _group_times(df) -> dict[str, Any]:
    """Seconds each case group took in its worker (first row's start to last row's end):
    their median and total (``group_s_median``, ``group_s_total``, ``n_groups``)."""
    if not {"started_at", "finished_at"} <= set(df.columns):
        return {"group_s_median": math.nan, "group_s_total": math.nan, "n_groups": 0}
    keys = [c for c in ("workload", "variant", "framework", "device", "dtype", "size",
                        "run_id") if c in df.columns]
    ran = df[df["status"] != "skipped"]
    spans = []
    for _, g in ran.groupby(keys, dropna=False, sort=False) if keys and len(ran) else []:
        start = g["started_at"].map(as_number).min()
        end = g["finished_at"].map(as_number).max()
        if math.isfinite(start) and math.isfinite(end) and end >= start:
            spans.append(end - start)
    return {"group_s_median": float(np.median(spans)) if spans else math.nan,
            "group_s_total": float(sum(spans)) if spans else math.nan, "n_groups": len(spans)}
