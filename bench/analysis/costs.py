"""First-call costs: the amortized cost of the first N calls and the break-even call count."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitbench.analysis.values import CASE_KEYS, call_times, row_median, as_number, pandas_module
from jitbench.define.modes import MODES


def amortized_cost(first_call_s: float, early_calls_s: Sequence[float], median_s: float,
                   n_calls) -> np.ndarray:
    """Total seconds of the first N calls (vectorised over ``n_calls`` ≥ 1): the first call,
    then the measured calls 2..k+1, then the median for every further call."""
    n = np.asarray(n_calls, dtype=float)
    early = np.asarray(call_times(early_calls_s), dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(early)])  # cum[j] = sum of the first j early calls
    j = np.clip(n - 1, 0, early.size).astype(int)
    return first_call_s + cum[j] + np.maximum(n - 1 - early.size, 0) * median_s


def break_even_calls(on: Mapping[str, Any], off: Mapping[str, Any]) -> float:
    """Smallest N from which the JIT mode's total time of N calls stays ≤ the baseline's.

    ``on`` / ``off`` carry first_call_s, early_calls_s (optional) and median_s. Returns 1.0 when
    JIT is never behind, ``inf`` when it is not faster per call, NaN when a time is missing.
    """
    f_on, f_off = as_number(on.get("first_call_s")), as_number(off.get("first_call_s"))
    t_on, t_off = row_median(on), row_median(off)
    if any(math.isnan(x) for x in (f_on, f_off, t_on, t_off)):
        return math.nan
    if t_on >= t_off:
        return math.inf
    e_on, e_off = call_times(on.get("early_calls_s")), call_times(off.get("early_calls_s"))
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


def amortized_curves(df, sp, n_calls: Sequence[int] | None = None):
    """Amortized cost of the first N calls of every mode that has a speedup row, per case.

    Long format: CASE_KEYS, mode, jit, n_calls, total_s, per_call_s (= total_s / n_calls).
    ``n_calls`` defaults to a log grid from 1 to 10× the largest finite break-even (≥ 1000).
    """
    pd = pandas_module()
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
        f, t = as_number(r.get("first_call_s")), row_median(r)
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
