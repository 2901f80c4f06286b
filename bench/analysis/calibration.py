"""Calibration facts: the measured matmul peak, each mode's dispatch floor, and how every row
reads against them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jitbench.analysis.values import ROW_KEYS, row_median, as_number, pandas_module

# A mode whose dispatch floor is above this share of its median is "dispatch-bound": its time
# says more about the framework's per-call overhead than about the computation.
DISPATCH_BOUND_SHARE = 0.5


def calibration_frames(calibration: Mapping[str, Any] | None):
    """(peaks, floors) DataFrames from ``meta["calibration"]``; empty frames when absent.

    peaks: source, framework, mode, device, gflops (fastest call), gflops_median, min_s,
    median_s, status, error.
    floors: framework, mode, device, floor_s, status ("ok" | "derived" | failure), note.
    """
    pd = pandas_module()
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
    pd = pandas_module()
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
    pd = pandas_module()
    peaks = peak_gflops(calibration)
    _, floors = calibration_frames(calibration)
    floors = floors[floors["status"].isin(["ok", "derived"])]
    peak_of = dict(zip(peaks["device"], peaks["peak_gflops"]))
    floor_of = {(r["framework"], r["mode"], r["device"]): r["floor_s"]
                for r in floors.to_dict("records")}
    out = []
    for r in df.to_dict("records"):
        med = row_median(r)
        gf = as_number(r.get("gflops"))
        if math.isnan(gf) and med > 0 and as_number(r.get("flops")) > 0:
            gf = as_number(r.get("flops")) / med / 1e9
        peak = peak_of.get(r["device"], math.nan)
        floor = as_number(floor_of.get((r["framework"], r["mode"], r["device"])))
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
