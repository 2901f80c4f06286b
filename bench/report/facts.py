"""Everything the page says about a run, computed once: the ``jitbench.analysis`` DataFrames of
one run, and small helpers the sections share to turn them into template values."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from jitbench import analysis
# owned by analysis; the sections read it here
from jitbench.analysis.values import text_or  # noqa: F401


class RunFacts:
    """One run's rows (``df``), ``meta``, and what ``jitbench.analysis`` derives from them. Frames
    carry a ``work`` column (work per call, from ``analysis.size_order``) where sizes matter.

    What rests on the speedups' bootstrap (``sp`` and everything after it) is computed on
    first use, so figures of the rows alone can be drawn meanwhile; ``compute`` computes all.
    """

    def __init__(self, df, meta: dict[str, Any], *, n_boot: int = analysis.N_BOOT):
        self.df, self.meta, self.n_boot = df, meta, n_boot
        cal = meta.get("calibration")
        self.order = analysis.size_order(df)
        self.rows = with_work(analysis.row_facts(df, cal), self.order)
        # calibration: every peak measurement, the dispatch floors, peak GFLOP/s
        self.peak_rows, self.floors = analysis.calibration_frames(cal)
        self.peaks = analysis.peak_gflops(cal)

    @classmethod
    def compute(cls, df, meta: dict[str, Any], *, n_boot: int = analysis.N_BOOT) -> RunFacts:
        run = cls(df, meta, n_boot=n_boot)
        for name in ("sp", "gm", "cross", "summary", "curves"):
            getattr(run, name)
        return run

    @property
    def calibration(self) -> dict[str, Any] | None:
        return self.meta.get("calibration")

    @functools.cached_property
    def controls(self):
        """``analysis.aa_controls``: identical programs measured apart in this run."""
        return analysis.aa_controls(self.df, n_boot=self.n_boot)

    @functools.cached_property
    def bands(self):
        """``analysis.aa_bands``: where identical programs landed, per kind of control."""
        return analysis.aa_bands(self.controls)

    @functools.cached_property
    def scatter(self) -> dict[tuple[str, str], float]:
        """``analysis.aa_scatter``: how far identical programs scatter, per framework/device."""
        return analysis.aa_scatter(self.controls)

    @functools.cached_property
    def sp(self):
        """``analysis.speedups`` + work, the A/A controls' scatter already in the intervals."""
        sp = with_work(analysis.speedups(self.df, n_boot=self.n_boot), self.order)
        return analysis.widen(sp, self.scatter)

    @functools.cached_property
    def gm(self):
        return analysis.geomean_speedups(self.sp, self.df)

    @functools.cached_property
    def absent(self) -> dict[str, str]:
        """{device: one line} for each device whose every row was skipped (no GPU here), e.g.
        ``{"gpu": "gpu: not present, 98 cases skipped (JAX sees no gpu device)"}``: the page
        says so once instead of showing its empty speedups."""
        out = {}
        for device, g in self.df.groupby("device", sort=True):
            if len(g) and (g["status"] == "skipped").all():
                errors = g["error"].dropna() if "error" in g else []
                why = f" ({errors.value_counts().index[0].strip()[:160]})" if len(errors) else ""
                out[device] = f"{device}: not present, {len(g)} cases skipped{why}"
        return out

    @functools.cached_property
    def gm_present(self):
        """:attr:`gm` without the devices of :attr:`absent`."""
        return self.gm[~self.gm["device"].isin(list(self.absent))] if len(self.gm) else self.gm

    @functools.cached_property
    def cross(self):
        return analysis.crossovers(self.sp, self.order)

    @functools.cached_property
    def headline(self) -> dict[str, Any]:
        return analysis.headline_numbers(self.df, self.sp)

    @functools.cached_property
    def curves(self):
        return analysis.amortized_curves(self.df, self.sp)


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


@dataclasses.dataclass(frozen=True)
class Need:
    """What a report section needs of a run (``Section.needs``): ``missing(run)`` gives None
    where the run has it, else the one line the page shows in the section's place."""

    name: str
    missing: Callable[[RunFacts], str | None]


# a JIT-on and a JIT-off mode of one case, both ok: every speedup, geomean and break-even
PAIRS = Need("pairs", lambda run: analysis.why_no_pairs(run.df))
# the run's calibration (matmul peaks, dispatch floors)
CALIBRATION = Need("calibration", lambda run: None if run.calibration else
                   "this run has no calibration (made with --no-calibrate, by an older "
                   "jitbench, or imported): no % of peak, no dispatch floors")
