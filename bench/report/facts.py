"""Everything the page says about a run, computed once: the ``bench.analysis`` DataFrames of
one run, and small helpers the sections share to turn them into template values."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .. import analysis


@dataclasses.dataclass
class RunFacts:
    """One run's rows (``df``), ``meta``, and what ``bench.analysis`` derives from them. Frames
    carry a ``work`` column (work per call, from ``analysis.size_order``) where sizes matter."""

    df: Any
    meta: dict[str, Any]
    order: Any  # analysis.size_order
    rows: Any  # analysis.row_facts + work
    sp: Any  # analysis.speedups + work
    gm: Any  # analysis.geomean_speedups
    cross: Any  # analysis.crossovers
    summary: dict[str, Any]
    peak_rows: Any  # analysis.calibration_frames: every peak measurement
    floors: Any  # analysis.calibration_frames: dispatch floors
    peaks: Any  # analysis.peak_gflops
    curves: Any  # analysis.amortized_curves
    controls: Any = None  # analysis.aa_controls; sp is already widened by them

    @property
    def calibration(self) -> dict[str, Any] | None:
        return self.meta.get("calibration")

    @classmethod
    def compute(cls, df, meta: dict[str, Any], *, n_boot: int = analysis.N_BOOT) -> RunFacts:
        cal = meta.get("calibration")
        order = analysis.size_order(df)
        rows = with_work(analysis.row_facts(df, cal), order)
        sp = with_work(analysis.speedups(df, n_boot=n_boot), order)
        # identical programs measured apart in this run: intervals too narrow for them widen
        controls = analysis.aa_controls(df, n_boot=n_boot)
        sp = analysis.widen(sp, analysis.widening_factor(controls))
        peak_rows, floors = analysis.calibration_frames(cal)
        return cls(df=df, meta=meta, order=order, rows=rows, sp=sp,
                   gm=analysis.geomean_speedups(sp, df), cross=analysis.crossovers(sp, order),
                   summary=analysis.summary(df, sp), peak_rows=peak_rows, floors=floors,
                   peaks=analysis.peak_gflops(cal), curves=analysis.amortized_curves(df, sp),
                   controls=controls)


def with_work(frame, order):
    """``frame`` with the work per call of its (workload, variant, size), same index."""
    if frame.empty:
        frame = frame.copy()
        frame["work"] = []
        return frame
    out = frame.merge(order[["workload", "variant", "size", "work"]],
                      on=["workload", "variant", "size"], how="left")
    out.index = frame.index
    return out


def nearest_only(frame):
    """The rows of ``frame`` (framework and baseline columns) that are the nearest pair."""
    if frame.empty:
        return frame
    keep = [analysis.is_nearest(f, b) for f, b in zip(frame["framework"], frame["baseline"])]
    return frame[np.asarray(keep, dtype=bool)]


def isnan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def records(frame) -> list[dict[str, Any]]:
    """Rows as dicts with None for missing values (pandas gives NaN, which is truthy)."""
    return [{k: None if isnan(v) else v for k, v in r.items()}
            for r in frame.to_dict("records")]


def text_or(v, default=None):
    """``v`` when it is a string (a message, a note), else ``default``: pandas fills missing
    strings with NaN."""
    return v if isinstance(v, str) else default
