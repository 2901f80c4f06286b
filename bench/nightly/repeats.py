"""Repeat where the noise is left: a night measures each series in as many fresh processes as
its own history says it needs (``jitbench.analysis.processes``), within a budget.

After the night's run (one process per worker group), :func:`plan` gives each JIT series
``k``: the processes its scatter between nights of one process, and tonight's interval, need
for a step of the threshold to stand ``z_min + 1.645`` noises clear; at most
``max_processes``; 1 before the series has ``min_previous`` earlier nights (it is not judged
yet). :func:`measure` then runs rounds 2..k, each in fresh processes: round ``j`` measures,
under ``<night>/repeats/<night>-p<j>/``, every case of the worker groups that hold a series
with k >= j (the group's neighbours and order, as on the night), while the night's repeat
budget lasts. The history (``jitbench.nightly.past_nights.analyse``) reads them back with
:func:`repeat_rows`: a series' point is then the combination of its processes
(``jitbench.analysis.history.combined_points``).

Also the helpers a re-measurement shares: :func:`night_cases` (a night's cases in its order)
and :func:`worker_groups` (every case of the worker groups that hold some cases).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.analysis.processes import interval_sigma, processes_needed, single_process_sigma
from jitbench.define.modes import MODES
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.nightly import MAX_PROCESSES
from jitbench.results.files import load_meta, read_rows
from jitbench.results.run_folder import REPEATS, repeat_run_id
from jitbench.run.fresh_processes import run_process_rounds


def night_cases(run_dir: Path) -> list[Case]:
    """The cases of a run in the order it measured them (cases.json; a merged run has none:
    then the order of its rows)."""
    from jitbench.results.run_folder import load_run

    try:
        return load_run(run_dir, quiet=True)[1]
    except UserError:
        return [Case.from_row(r) for r in read_rows(run_dir / "results.jsonl")]


def worker_groups(cases: Sequence[Case], ids: set[str]) -> list[Case]:
    """Every case of the worker groups (framework, worker group, device) that hold one of
    ``ids``, in the night's order."""
    from jitbench.run.groups import worker_key

    keys = {worker_key(c) for c in cases if c.case_id in ids}
    return [c for c in cases if worker_key(c) in keys]


def repeat_rows(run_dir: Path) -> list[list[dict[str, Any]]]:
    """The rows of each further process a night measured (oldest first; [] without any)."""
    folder = Path(run_dir) / REPEATS
    if not folder.is_dir():
        return []
    runs = sorted((d for d in folder.iterdir() if (d / "results.jsonl").is_file()),
                  key=lambda d: (load_meta(d).get("started_at") or "", d.name))
    return [read_rows(d / "results.jsonl") for d in runs]


def plan(points, reference: Sequence[str], thresholds, max_processes: int = MAX_PROCESSES
         ) -> dict[str, dict[str, Any]]:
    """case id -> ``processes`` (k), ``sigma_one`` (the series' night-to-night sigma with one
    process a night, log units) and ``night_sigma`` (tonight's own, from its interval), for
    each JIT series of the latest night of ``reference`` (the nights it is judged against
    before it). ``points``: ``jitbench.analysis.history.points_table``. The scatter is the
    quieter of the series' two quantities, as the rule judges it
    (``jitbench.analysis.detectors.judge_night``: the ratio, or the JIT time against the
    machine); tonight's interval is the ratio's (the JIT time has none)."""
    import numpy as np
    from jitbench.analysis.detectors import beyond_usual, usual_night_sigma
    from jitbench.analysis.history import tonight_against_history
    from jitbench.protocol.timing import robust_sigma

    if not reference:
        return {}
    latest = reference[-1]
    ratios = points[points["metric"] == "jit_ratio"]
    earlier = ratios[ratios["run_id"].isin(list(reference[:-1]))]
    times = tonight_against_history(earlier, ratios[ratios["run_id"] == latest])
    by_series = {s: g for s, g in earlier.groupby("series", sort=False)}
    out = {}
    for p in ratios[ratios["run_id"] == latest].to_dict("records"):
        prev = by_series.get(p["series"])
        if prev is None or len(prev) < thresholds.min_previous:
            continue
        prev = prev.tail(max(thresholds.window, thresholds.paired_window))
        logs = np.log(prev["value"].to_numpy(float))
        alt = np.asarray(times.get(p["series"], {}).get("jit_time", [0.0])[:-1][-len(prev):],
                         float)
        alt = alt[~np.isnan(alt)]
        if alt.size >= thresholds.min_previous and robust_sigma(alt) < robust_sigma(logs):
            logs = alt
        counts = prev["processes"].fillna(1).astype(int).tolist() \
            if "processes" in prev.columns else [1] * len(prev)
        sigma_one = single_process_sigma(logs.tolist(), counts, thresholds.floor_paired)
        night = interval_sigma(p.get("low"), p.get("high")) or 0.0
        k = p.get("processes")
        night *= math.sqrt(k if isinstance(k, (int, float)) and k >= 1 else 1)  # one
        # process's sigma, where tonight had more; counted beyond the earlier nights' usual
        # one, as the rule counts it (detectors.paired_night)
        if {"low", "high"} <= set(prev.columns):
            usual = usual_night_sigma(np.log(prev["low"].to_numpy(float)),
                                      np.log(prev["high"].to_numpy(float)))
            night = beyond_usual(night, usual * math.sqrt(float(np.median(counts))))
        out[p["case_id"]] = {
            "processes": processes_needed(sigma_one, night, thresholds.steady,
                                          thresholds.z_min, max_processes),
            "sigma_one": round(sigma_one, 5), "night_sigma": round(night, 5)}
    return out


def measure(run_dir: Path, planned: dict[str, dict[str, Any]], run_kw: dict[str, Any],
            budget_s: float) -> dict[str, Any]:
    """Rounds 2.. of the plan after the night's run, one after another, each in fresh
    processes under ``run_dir/repeats/`` (on the night's core where its profile pins one: a
    second process measured at the same time on another core scattered more than one alone,
    docs/lab/nightly-live-check/index.md), while ``budget_s`` seconds last (a round starts
    only when what it is expected to take, from the night's own seconds per case, fits in what
    is left). The facts for the summary."""
    from jitbench.run import runner

    cases = night_cases(run_dir)
    meta = load_meta(run_dir)
    night_s = meta.get("elapsed_s")
    calibration_s = (meta.get("calibration") or {}).get("elapsed_s")
    if isinstance(night_s, (int, float)) and isinstance(calibration_s, (int, float)):
        night_s -= calibration_s  # a further process does not calibrate
    per_case = (float(night_s) / len(cases)) if isinstance(night_s, (int, float)) and cases \
        else None
    top = max((v["processes"] for v in planned.values()), default=1)
    measured = {c.case_id: 1 for c in cases if MODES[(c.framework, c.mode)].jit}
    runs: list[str] = []

    def series(j: int) -> set[str]:  # round j measures the series with k >= j
        return {c for c, v in planned.items() if v["processes"] >= j}

    def pending(j: int) -> list[Case]:  # ... and every case of their worker groups
        return worker_groups(cases, series(j))

    def measure(j: int, again: list[Case]) -> None:
        d = runner.run(again, run_dir / REPEATS, run_id=repeat_run_id(run_dir.name, j),
                       calibrate=False, **run_kw)
        runs.append(str(d))
        done = {r.get("case_id") for r in read_rows(d / "results.jsonl")
                if r.get("status") == "ok"}
        for c in done & series(j):
            measured[c] += 1

    # rounds 2..top, while what the next is expected to take (the night's seconds per case)
    # fits in the budget
    did = run_process_rounds(measure, pending, first=2, max_rounds=top + 1, time_limit=budget_s,
                     expected=lambda again: per_case * len(again) if per_case else 0.0)
    spent = sum(did.round_s)
    stopped = None if did.stopped != "time" else (
        f"round {did.done} of {top} not measured: it would take about {did.need_s:.0f} s "
        f"and {did.left_s:.0f} s of the {budget_s:.0f} s repeat budget were left")
    counts = sorted(measured.values())
    most = max(counts, default=1)
    return {"planned": {c: v["processes"] for c, v in planned.items()},
            "measured": measured, "runs": runs, "spent_s": round(spent, 1),
            "budget_s": round(budget_s, 1), "stopped": stopped,
            "n_repeated": sum(1 for v in counts if v > 1),
            "text": (f"{sum(1 for v in counts if v > 1)} of {len(counts)} JIT series measured "
                     f"in more than one fresh process tonight (up to {most}; "
                     f"{spent:.0f} s of a {budget_s:.0f} s budget for further rounds)"
                     + (f"; {stopped}" if stopped else ""))}
