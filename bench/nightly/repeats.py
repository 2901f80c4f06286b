"""Repeat where the noise is left: a night measures each series in as many fresh processes as
its own history says it needs (``jitbench.analysis.processes``), within a budget.

After the night's run (one process per worker group), :func:`plan` gives each JIT series
``k``: the processes its scatter between nights of one process, and tonight's interval, need
for a step of the threshold to stand ``z_min + 1.645`` noises clear; at most
``max_processes``; 1 before the series has ``min_previous`` earlier nights (it is not judged
yet). :func:`measure` then runs rounds 2..k, each in fresh processes: round ``j`` measures,
under ``<night>/repeats/<night>-p<j>/``, every case of the worker groups that hold a series
with k >= j (the group's neighbours and order, as on the night), while the night's repeat
budget lasts. The history (``jitbench.nightly.night.analyse``) reads them back with
:func:`repeat_rows`: a series' point is then the combination of its processes
(``jitbench.analysis.history.combined_points``).

Also the helpers a re-measurement shares: :func:`night_cases` (a night's cases in its order)
and :func:`worker_groups` (every case of the worker groups that hold some cases).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.analysis.processes import (interval_sigma, processes_needed,
                                         single_process_sigma)
from jitbench.define.modes import MODES
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.nightly import MAX_PROCESSES
from jitbench.results.files import load_meta, read_rows

FOLDER = "repeats"  # under a night's run folder


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
    from jitbench.run.runner import worker_key

    keys = {worker_key(c) for c in cases if c.case_id in ids}
    return [c for c in cases if worker_key(c) in keys]


def repeat_rows(run_dir: Path) -> list[list[dict[str, Any]]]:
    """The rows of each further process a night measured (oldest first; [] without any)."""
    folder = Path(run_dir) / FOLDER
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


def spare_cores(process_profile: str) -> tuple[int, int] | None:
    """(the night's core, a second one) where a second process can be measured beside the
    night's run: the ``stable`` profile (each process pinned to its core) and at least two
    cores this process may use; None elsewhere (unpinned processes would share the cores)."""
    import os

    if process_profile != "stable" or not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    return (cores[0], cores[1]) if len(cores) >= 2 else None


class Beside:
    """Cases in a second fresh process, on a core of its own, while a run measures them on the
    first (``with Beside(...)``; on a 2-core host a pinned run leaves the second core idle):
    a second process at no extra wall time (:func:`run_with_beside`), the night's at
    ``<night>/repeats/<night>-p2``. What went
    wrong, if anything, is in ``error`` (the night goes on with one process); ``run_dir``:
    the run it wrote."""

    def __init__(self, cases: Sequence[Case], out_root: Path, run_id: str,
                 run_kw: dict[str, Any], core: int):
        self.cases, self.core = list(cases), core
        self.run_dir = Path(out_root) / run_id
        self.run_kw = {**run_kw, "on_progress": None}
        self.error: str | None = None
        self.spent_s = 0.0
        self._thread = None

    def _run(self) -> None:
        from jitbench.run import runner

        t0 = time.perf_counter()
        try:
            runner.run(self.cases, self.run_dir.parent, run_id=self.run_dir.name,
                       calibrate=False, cpu_core=self.core, **self.run_kw)
        except BaseException as exc:  # noqa: BLE001 - the night goes on with one process
            self.error = f"{type(exc).__name__}: {exc}"
        self.spent_s = time.perf_counter() - t0

    def __enter__(self) -> "Beside":
        import threading

        self._thread = threading.Thread(target=self._run, name="jitbench-beside", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self._thread.join()


def run_with_beside(cases: Sequence[Case], out_root: Path, run_id: str,
                    run_kw: dict[str, Any], beside_at: tuple[Path, str], calibrate: bool = True,
                    pair: bool = True) -> tuple[Path, Beside | None]:
    """A run of ``cases`` (``jitbench.run.runner.run``) and, where ``pair`` and
    :func:`spare_cores` give a second core, the same cases in a second process beside it
    (``beside_at``: that run's results folder and id): (the run's folder, the
    :class:`Beside` or None). The night runs so (a re-measurement round does not: one
    process alone, ``jitbench.nightly.night._recheck``)."""
    from jitbench.run import runner

    cores = spare_cores(run_kw["process_profile"]) if pair else None
    beside = Beside(cases, beside_at[0], beside_at[1], run_kw, cores[1]) if cores else None
    with beside or contextlib.nullcontext():
        run_dir = runner.run(cases, out_root, run_id=run_id, calibrate=calibrate, **run_kw,
                             **({"cpu_core": cores[0]} if cores else {}))
    return run_dir, beside


def measure(run_dir: Path, planned: dict[str, dict[str, Any]], run_kw: dict[str, Any],
            budget_s: float, beside: Beside | None = None) -> dict[str, Any]:
    """Rounds of the plan beyond those measured already (the night's run, and ``beside`` it a
    second process on another core), each in fresh processes under ``run_dir/repeats/``, while
    ``budget_s`` seconds last (a round starts only when what it is expected to take, from the
    night's own seconds per case, fits in what is left). The facts for the summary."""
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
    spent, runs = 0.0, []
    stopped, first = None, 2
    if beside is not None:
        done_beside = beside.run_dir / "results.jsonl"
        ok = {r.get("case_id") for r in (read_rows(done_beside) if done_beside.is_file()
                                          else []) if r.get("status") == "ok"}
        for c in measured:
            measured[c] += c in ok
        runs.append(str(done_beside.parent))
        first = 3
    for j in range(first, top + 1):
        ids = {c for c, v in planned.items() if v["processes"] >= j}
        again = worker_groups(cases, ids)
        expected = per_case * len(again) if per_case else 0.0
        if spent + expected > budget_s:
            stopped = (f"round {j} of {top} not measured: it would take about {expected:.0f} s "
                       f"and {max(0.0, budget_s - spent):.0f} s of the {budget_s:.0f} s repeat "
                       f"budget were left")
            break
        t0 = time.perf_counter()
        d = runner.run(again, run_dir / FOLDER, run_id=f"{run_dir.name}-p{j}", calibrate=False,
                       **run_kw)
        spent += time.perf_counter() - t0
        runs.append(str(d))
        done = {r.get("case_id") for r in read_rows(d / "results.jsonl")
                if r.get("status") == "ok"}
        for c in ids & done:
            measured[c] += 1
    counts = sorted(measured.values())
    most = max(counts, default=1)
    side = (f"; a second process on core {beside.core} beside the night's run"
            + (f" failed ({beside.error})" if beside.error else "")) if beside else ""
    return {"planned": {c: v["processes"] for c, v in planned.items()},
            "measured": measured, "runs": runs, "spent_s": round(spent, 1),
            "budget_s": round(budget_s, 1), "stopped": stopped,
            "beside": None if beside is None else {"core": beside.core, "error": beside.error,
                                                   "spent_s": round(beside.spent_s, 1)},
            "n_repeated": sum(1 for v in counts if v > 1),
            "text": (f"{sum(1 for v in counts if v > 1)} of {len(counts)} JIT series measured "
                     f"in more than one fresh process tonight (up to {most}{side}; "
                     f"{spent:.0f} s of a {budget_s:.0f} s budget for further rounds)"
                     + (f"; {stopped}" if stopped else ""))}
