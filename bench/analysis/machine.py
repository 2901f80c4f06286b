"""Did the machine move? Nights of unchanged code on one machine keep their JIT-off times
within a few percent; a neighbour, another VM host or a disturbed night moves all of them
together, and the paired JIT/JIT-off ratios with them. The nightly judges no step on such a
night (:func:`machine_state`) and an alert names the move (:func:`machine_speed`); the
replay of recorded nights uses the same levels (``jitbench.analysis.detectors``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitbench.analysis.detectors import (MACHINE_BOUND, MACHINE_WINDOW, machine_levels,
                                      steady_nights)


def jit_off(df):
    """The rows of JIT-off modes (all rows of a table without the ``jit`` column)."""
    if "jit" not in df.columns:
        return df
    return df[df["jit"].map(lambda v: v is False or v == 0)]


def log_medians(df, runs: Sequence[str]):
    """[case, run] log of each ok row's median time (NaN where a run lacks the case): what
    ``jitbench.analysis.detectors.machine_levels`` reads."""
    ok = df[(df["status"] == "ok") & (df["median_s"] > 0) & df["run_id"].isin(list(runs))]
    wide = ok.pivot_table(index="case_id", columns="run_id", values="median_s",
                          aggfunc="median")
    wide = wide.reindex(columns=list(runs))
    return np.log(wide.to_numpy(dtype=float)) if len(wide) else np.zeros((0, len(runs)))


def machine_speed(df, before: str, latest: str) -> dict[str, Any] | None:
    """How much slower (factor > 1) the JIT-off modes ran on ``latest`` than on ``before``:
    the median over the cases both measured of the ratio of their medians. The same code on
    the same host moves a few percent night to night; a factor far from 1 says the machine
    changed (another VM host, a neighbour), which moves paired ratios too. A JIT regression
    does not move JIT-off times."""
    logs = log_medians(jit_off(df), [before, latest])
    step = logs[:, 1] - logs[:, 0]
    step = step[np.isfinite(step)]
    if step.size < 3:
        return None
    return {"factor": float(np.exp(np.median(step))), "cases": int(step.size),
            "q10": float(np.exp(np.quantile(step, 0.1))),
            "q90": float(np.exp(np.quantile(step, 0.9)))}


def machine_state(df, metas: Mapping[str, Mapping[str, Any]], runs: Sequence[str],
                  bound: float | None = MACHINE_BOUND) -> dict[str, Any]:
    """How the machine ran on the last of ``runs`` (oldest first) against the
    ``MACHINE_WINDOW`` runs before it (``detectors.machine_levels`` of the JIT-off medians):
    ``factor`` (>1: slower) and ``steady`` (``bound`` None: always). A night with other
    framework versions than the night before is steady whatever its speed: a new TF or JAX
    that slows every JIT-off mode is for the history to show, not to hide."""
    runs = list(runs)[-(MACHINE_WINDOW + 1):]
    level = (machine_levels(log_medians(jit_off(df), runs))[-1] if len(runs) > 1
             else math.nan)
    versions = [(metas.get(r) or {}).get("frameworks") for r in runs[-2:]]
    return {"factor": None if math.isnan(level) else math.exp(level), "bound": bound,
            "compared_with": runs[:-1],
            "steady": bool(bound is None or steady_nights(np.array([level]), bound)[0]
                           or (len(versions) == 2 and versions[0] != versions[1]))}


def waiting_nights(df, metas: Mapping[str, Mapping[str, Any]], runs: Sequence[str],
                   bound: float | None = MACHINE_BOUND) -> list[str]:
    """The runs just before the last of ``runs`` that no steady night has judged since the
    machine moved on them (``machine_state`` not steady), oldest first: the last run's
    reference leaves them out (``detectors.reference_end``), so a step that began on a
    disturbed night is still a step on the next steady one."""
    runs, out = list(runs), []
    for i in range(len(runs) - 2, 0, -1):
        if machine_state(df, metas, runs[:i + 1], bound)["steady"]:
            break
        out.insert(0, runs[i])
    return out
