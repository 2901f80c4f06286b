"""First calls, taken apart: trace | lower | compile | run, cold and warm compilation cache.

DataFrame -> plain records (data only; the report draws and words them). Fields come from the
rows: ``first_call_s`` and the adapters' first-call counters ``first_trace_s``,
``first_lower_s`` (JAX), ``first_compile_s``; with ``--compile-cache warm`` also
``first_call_warm_s``, ``warm_*_s`` and ``cache_hits`` (``jitbench.run.compile_cache``).
"""

from __future__ import annotations

import math
from typing import Any

from jitbench.analysis.costs import break_even_calls
from jitbench.analysis.values import as_number
from jitbench.define.modes import MODES

PARTS = ("trace", "lower", "compile", "run")


def _z(v) -> float:
    v = as_number(v)
    return 0.0 if math.isnan(v) else v


def _label(r) -> str:
    return f"{r['workload']} {r['variant']} {r['size']} {r['dtype']}"


def anatomy(df) -> list[dict[str, Any]]:
    """One record per JIT-on row that ran: its first call split into ``trace``, ``lower``,
    ``compile`` and ``run`` (the rest: first execution and dispatch), seconds; with a warm
    pass also ``warm`` = {trace, lower, lookup (cache retrieval), compile, run}."""
    if df.empty or "jit" not in df:
        return []
    out = []
    ok = df[(df["status"] == "ok") & df["jit"].astype(bool)]
    for r in ok.to_dict("records"):
        first = as_number(r.get("first_call_s"))
        if math.isnan(first):
            continue
        parts = {p: _z(r.get(f"first_{p}_s")) for p in PARTS[:3]}
        rec = dict(label=_label(r), framework=r["framework"], mode=r["mode"],
                   first_call_s=first, **parts,
                   run=max(first - sum(parts.values()), 0.0))
        warm = as_number(r.get("first_call_warm_s"))
        if not math.isnan(warm):
            lookup = _z(r.get("warm_cache_retrieval_s"))
            w = dict(trace=_z(r.get("warm_trace_s")), lower=_z(r.get("warm_lower_s")),
                     lookup=lookup, compile=max(_z(r.get("warm_compile_s")) - lookup, 0.0))
            w["run"] = max(warm - sum(w.values()), 0.0)
            rec["warm"] = w
        out.append(rec)
    return out


def cache_effect(df) -> list[dict[str, Any]]:
    """Per JIT-on row of a ``--compile-cache warm`` run: cold and warm first call, the time
    saved, persistent-cache hits, and the break-even call count against its baseline with
    cold first calls and with warm ones (the baseline's own warm first call where it has one)."""
    if df.empty or "first_call_warm_s" not in df:
        return []
    ok = df[df["status"] == "ok"]
    by_mode = {(r["case_id"].replace(f"-{r['mode']}-", "-", 1), r["mode"]): r
               for r in ok.to_dict("records")}
    out = []
    for (key, mode), r in by_mode.items():
        spec = MODES.get((r["framework"], mode))
        if not spec or not spec.jit or math.isnan(as_number(r.get("first_call_warm_s"))):
            continue
        base = by_mode.get((key, spec.baseline))
        cold, warm = as_number(r.get("first_call_cold_s", r.get("first_call_s"))), \
            as_number(r["first_call_warm_s"])
        rec = dict(label=_label(r), framework=r["framework"], mode=mode, cold_s=cold,
                   warm_s=warm, saved=(1 - warm / cold) if cold > 0 else math.nan,
                   cache_hits=int(_z(r.get("cache_hits"))), baseline=spec.baseline,
                   break_even_cold=math.nan, break_even_warm=math.nan)
        if base is not None:
            b_warm = as_number(base.get("first_call_warm_s"))
            rec["break_even_cold"] = break_even_calls(
                dict(r, first_call_s=cold), dict(base, first_call_s=as_number(
                    base.get("first_call_cold_s", base.get("first_call_s")))))
            rec["break_even_warm"] = break_even_calls(
                dict(r, first_call_s=warm),
                dict(base, first_call_s=b_warm if not math.isnan(b_warm)
                     else as_number(base.get("first_call_s"))))
        out.append(rec)
    return sorted(out, key=lambda d: (d["label"], d["framework"], d["mode"]))
