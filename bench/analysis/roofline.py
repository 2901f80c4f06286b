"""The roofline: how close each row comes to what the machine allows for its arithmetic
intensity, and XLA's FLOP counts against the workloads' formulas.

Definitions (the report quotes them):

- **ceilings** per device, from the run's calibration: the best float32 matmul GFLOP/s
  (``peak_gflops``) and the best STREAM-triad bandwidth in GB/s (``bandwidth_gbps``), each the
  maximum over every framework mode that measured it.
- **arithmetic intensity** of a case = formula FLOPs of one call / bytes XLA's cost analysis
  says one call accesses (``xla_bytes_accessed``). Bytes are a property of the computation,
  not of the mode: every mode of a case is placed at the intensity of that case's compiled
  program (the row's own where it has one, else a JIT row of the same case, JAX's first —
  the only framework whose compiler gives a cost analysis). Op-by-op modes move more bytes
  than that; the roofline then flatters them, never the reverse.
- **roofline bound** = min(peak, bandwidth × intensity) GFLOP/s; **fraction of bound** =
  achieved GFLOP/s / bound; the bound is ``memory`` when bandwidth × intensity < peak, else
  ``compute``.
- **FLOP check**: XLA's FLOPs / formula FLOPs per JIT row; off by more than 10%
  (``jitbench.xla.hlo_text.FLOPS_MISMATCH``) is flagged. XLA counts transcendentals apart and
  is known to miscount some ops: a cross-check, never a replacement of the formula.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jitbench.analysis.calibration import peak_gflops
from jitbench.analysis.values import ROW_KEYS, row_median, as_number, pandas_module, truthy
from jitbench.define.modes import FRAMEWORKS
from jitbench.xla.hlo_text import FLOPS_MISMATCH

# a case: what every mode of it computes alike (its bytes, its FLOPs)
_CASE = ["workload", "variant", "size", "dtype", "device"]


def bandwidth_gbps(calibration: Mapping[str, Any] | None):
    """Best measured triad GB/s per device. Columns: device, bandwidth_gbps,
    bandwidth_source ("jax jit", ...)."""
    pd = pandas_module()
    entries = [e for e in (calibration or {}).get("bandwidth", [])
               if e.get("status") == "ok" and as_number(e.get("gbps")) > 0]
    best: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e["device"] not in best or e["gbps"] > best[e["device"]]["gbps"]:
            best[e["device"]] = e
    return pd.DataFrame([{"device": d, "bandwidth_gbps": float(e["gbps"]),
                          "bandwidth_source": f"{e['framework']} {e['mode']}"}
                         for d, e in sorted(best.items())],
                        columns=["device", "bandwidth_gbps", "bandwidth_source"])


def ceilings(calibration: Mapping[str, Any] | None):
    """Both ceilings per device (either may be NaN). Columns: device, peak_gflops,
    peak_source, bandwidth_gbps, bandwidth_source, ridge (FLOP/byte where they meet)."""
    peaks, bws = peak_gflops(calibration), bandwidth_gbps(calibration)
    out = peaks.merge(bws, on="device", how="outer")
    out["ridge"] = out["peak_gflops"] / out["bandwidth_gbps"]
    return out.sort_values("device").reset_index(drop=True)


def _doubtful(r) -> bool:
    """XLA's FLOPs of this row are off the formula's: its byte count is doubtful too (XLA
    counts a while loop's body once, whatever the trip count)."""
    ratio = as_number(r.get("xla_flops_ratio"))
    return bool(not math.isnan(ratio) and abs(ratio - 1) > FLOPS_MISMATCH)


def _case_bytes(df) -> dict[tuple, tuple[float, str, bool]]:
    """(bytes per call, which row they come from, doubtful) per case: the first row with
    XLA's bytes, in framework then mode order."""
    out: dict[tuple, tuple[float, str, bool]] = {}
    if "xla_bytes_accessed" not in df.columns:
        return out
    order = {fw: i for i, fw in enumerate(FRAMEWORKS)}
    recs = sorted(df.to_dict("records"), key=lambda r: (order.get(r.get("framework"), 99),
                                                        str(r.get("mode"))))
    for r in recs:
        b = as_number(r.get("xla_bytes_accessed"))
        key = tuple(r.get(k) for k in _CASE)
        if b > 0 and key not in out:
            out[key] = (b, f"{r['framework']} {r['mode']}", _doubtful(r))
    return out


def roofline(df, calibration: Mapping[str, Any] | None):
    """Per row (same index and order as ``df``): intensity (FLOP/byte), intensity_source,
    intensity_doubtful (the bytes come from a cost analysis whose FLOPs are off the formula),
    gflops (achieved, formula FLOPs / median), bound_gflops, fraction_of_bound, bound
    ("memory" | "compute"; None where a ceiling or the bytes are missing)."""
    pd = pandas_module()
    ceil = {r["device"]: r for r in ceilings(calibration).to_dict("records")}
    case_bytes = _case_bytes(df)
    out = []
    for r in df.to_dict("records"):
        own = as_number(r.get("xla_bytes_accessed"))
        nbytes, source, doubtful = (own, "own", _doubtful(r)) if own > 0 else case_bytes.get(
            tuple(r.get(k) for k in _CASE), (math.nan, None, False))
        flops, med = as_number(r.get("flops")), row_median(r)
        intensity = flops / nbytes if nbytes > 0 and flops > 0 else math.nan
        gf = flops / med / 1e9 if med > 0 and flops > 0 else math.nan
        c = ceil.get(r.get("device"), {})
        peak, bw = as_number(c.get("peak_gflops")), as_number(c.get("bandwidth_gbps"))
        bound, kind = math.nan, None
        if not (math.isnan(intensity) or math.isnan(peak) or math.isnan(bw)):
            bound = min(peak, bw * intensity)
            kind = "memory" if bw * intensity < peak else "compute"
        out.append({"intensity": intensity, "intensity_source": source,
                    "intensity_doubtful": doubtful, "gflops": gf,
                    "bound_gflops": bound, "bound": kind,
                    "fraction_of_bound": gf / bound if bound > 0 else math.nan})
    return pd.DataFrame(out, index=df.index,
                        columns=["intensity", "intensity_source", "intensity_doubtful",
                                 "gflops", "bound_gflops", "bound", "fraction_of_bound"])


def flops_check(df):
    """JIT rows that have XLA's FLOP count, next to the formula's. Columns: ROW_KEYS, flops,
    xla_flops, xla_transcendentals, xla_bytes_accessed, xla_flops_ratio, mismatch."""
    pd = pandas_module()
    cols = ROW_KEYS + ["flops", "xla_flops", "xla_transcendentals", "xla_bytes_accessed",
                       "xla_flops_ratio", "mismatch"]
    if "xla_flops" not in df.columns:
        return pd.DataFrame([], columns=cols)
    out = []
    for r in df.to_dict("records"):
        xf = as_number(r.get("xla_flops"))
        if math.isnan(xf) or not truthy(r.get("jit")):
            continue
        flops = as_number(r.get("flops"))
        ratio = xf / flops if flops > 0 else math.nan
        out.append(dict({k: r.get(k) for k in ROW_KEYS}, flops=flops, xla_flops=xf,
                        xla_transcendentals=as_number(r.get("xla_transcendentals")),
                        xla_bytes_accessed=as_number(r.get("xla_bytes_accessed")),
                        xla_flops_ratio=ratio,
                        mismatch=bool(not math.isnan(ratio)
                                      and abs(ratio - 1) > FLOPS_MISMATCH)))
    return pd.DataFrame(out, columns=cols)
