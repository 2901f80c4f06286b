"""Sizes ordered by the work of one call, and where the speedup crosses 1 as the size grows."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitbench.analysis.stats import geomean
from jitbench.analysis.values import as_number, pandas_module, group_records


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
    pd = pandas_module()
    rows = {}
    for r in df.to_dict("records"):
        key = (r["workload"], r.get("variant"), r["size"])
        w = as_number(r.get("flops"))
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
    pd = pandas_module()
    sp = sp.drop(columns=["work"], errors="ignore")
    if order is not None and len(order):
        sp = sp.merge(order[["workload", "variant", "size", "work"]],
                      on=["workload", "variant", "size"], how="left")
    else:
        sp["work"] = sp["flops"]
    records = sp.to_dict("records")
    for r in records:
        r["sign"] = {"faster": 1, "slower": -1}.get(r["verdict"], 0)
    series = group_records(records, SERIES_KEYS)
    out = []
    for keys in sorted(series, key=lambda k: tuple(str(v) for v in k)):
        g = []
        for (size,), rs in group_records(series[keys], ["size"]).items():
            ss = {r["sign"] for r in rs}
            g.append((rs[0]["work"], size, geomean([r["speedup"] for r in rs]),
                      # a size counts as faster/slower only when every run of it says so
                      ss.pop() if len(ss) == 1 else 0))
        g.sort(key=lambda t: (math.isnan(t[0]), 0.0 if math.isnan(t[0]) else t[0], t[1]))
        work, sizes, s, signs = (list(col) for col in zip(*g))
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
