"""The re-measurement ("recheck") of a night's suspects: each put back in the context it had on
the night (every case group its worker measured, in the night's order, with a JIT-off control
beside them), a round of fresh processes at a time, until each is known to be slower, the
same or faster (``jitbench.nightly.night`` explains the design)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.analysis.history import Thresholds, detect_regressions, points_table
from jitbench.define.workload import Case
from jitbench.nightly.past_nights import History
from jitbench.nightly.repeats import night_cases, worker_groups
from jitbench.nightly.summary import record
from jitbench.results.files import load_meta, load_results
from jitbench.results.run_folder import RECHECKS, recheck_run_id


def recheck_plan(cases: Sequence[Case], suspect_ids: set[str]) -> tuple[list[Case], list[str]]:
    """(cases to re-measure, control case ids): every case of the suspects' worker groups in
    the night's order, and the first JIT-off case among them that is not suspect (none when
    those workers measured no JIT-off mode)."""
    from jitbench.define.modes import MODES

    again = worker_groups(cases, suspect_ids)
    controls = [c.case_id for c in again if not MODES[(c.framework, c.mode)].jit
                and c.case_id not in suspect_ids]
    return again, controls[:1]


RECHECK_ROUNDS = 3


def recheck_verdict(test: dict[str, Any], thresholds: Thresholds) -> str:
    """What a re-measurement says of one suspect (a :func:`detect_regressions` row of the
    rechecks' combined point): ``slower`` (suspect again under the same rule), ``faster`` or
    ``same`` (its interval excludes a step of the threshold: below the reference / (1 +
    threshold), or below reference x (1 + threshold)), else ``unresolved`` (more processes
    may tell). A metric without an interval (a count, a probe-normalised time) is ``slower``
    or ``same``."""
    if test.get("regression"):
        return "slower"
    high, ref = test.get("high"), test.get("reference")
    if test.get("metric") != "jit_ratio":
        return "same"
    if not (isinstance(high, float) and isinstance(ref, float) and high == high):
        return "unresolved"
    if high < ref / (1 + thresholds.steady):
        return "faster"
    return "same" if high < ref * (1 + thresholds.steady) else "unresolved"


def recheck(h: History, results_root: Path, thresholds: Thresholds, suspects, run_kw,
             rounds: int = RECHECK_ROUNDS):
    """Re-measure the suspects in their night's context, one round of fresh worker processes
    at a time, until each suspect's verdict is known (:func:`recheck_verdict`) or ``rounds``
    rounds are spent: confirm by measuring more, not by a majority of rounds.

    A round is one process, alone on its core: two at once on the two cores of the pinned
    profile read a JAX series' ratio with twice one process's scatter between processes
    (docs/lab/nightly-live-check/index.md). After each round a suspect's point is the
    combination of every re-measuring process so far
    (``jitbench.analysis.processes.combine``: the process is the unit, so its interval
    carries the scatter between processes), judged with the same rule against the same history
    (the night's own point left out, the correction counting only the suspects). One process
    landing in a slow state is not a step: on this machine an unchanged XLA program runs up to
    ~1.5x slower in some fresh processes for a while (a +37% "regression" of unchanged code
    was once confirmed, n6 of the note to issue 10); where one round leaves it open, the next
    process is added to the estimate. A suspect still ``unresolved`` after ``rounds`` rounds is
    not confirmed and is listed as such. (confirmed tests, recheck facts)."""
    import pandas as pd
    from jitbench.analysis.history import combined_points
    from jitbench.run import runner
    from jitbench.run.fresh_processes import run_process_rounds

    latest_dir = results_root / h.order[-1]
    flagged = suspects.loc[suspects["regression"]]
    again, controls = recheck_plan(night_cases(latest_dir), set(flagged["case_id"]))
    only = set(zip(flagged["series"], flagged["metric"]))
    dirs, per_round = [], []
    rounds = max(1, rounds)
    verdicts: dict[tuple[str, str], str] = {}
    state: dict[str, Any] = {}

    def pending(i: int) -> list[Case]:  # again while a suspect's verdict is unresolved
        return again if i == 0 or "unresolved" in verdicts.values() else []

    def measure(i: int, cases: list[Case]) -> None:
        # each analysis of the same night (e.g. `--no-run` twice) re-measures afresh
        done = runner.run(cases, latest_dir / RECHECKS, run_id=recheck_run_id(i),
                          calibrate=True, **run_kw)
        meta = load_meta(done)
        dirs.append(done)
        per_round.append(points_table(load_results(done), {meta["run_id"]: meta},
                                      [meta["run_id"]]).to_dict("records"))
        state["pts"] = pd.DataFrame(combined_points(per_round))
        state["confirmed"] = detect_regressions(h.points, h.judged_against, thresholds,
                                                latest=state["pts"], only=only,
                                                whole_night=False)
        verdicts.clear()
        verdicts.update({(r["series"], r["metric"]): recheck_verdict(r, thresholds)
                         for r in state["confirmed"].to_dict("records")})

    done_rounds = run_process_rounds(measure, pending, max_rounds=rounds).count
    pts, confirmed = state["pts"], state["confirmed"]
    control = detect_regressions(h.points, h.judged_against, thresholds, latest=pts[
        pts["case_id"].isin(controls) & (pts["metric"] == "baseline_norm")])
    disturbed = bool(((control["change"] > thresholds.steady)
                      & (control["p_value"] < thresholds.alpha)).any())
    if disturbed:  # the probe did not hold in this recheck: only the ratios are trusted
        confirmed.loc[confirmed["metric"].isin(["baseline_norm", "compile_norm"]),
                      "regression"] = False
    values = {}
    for points in per_round:
        for p in points:
            values.setdefault((p["series"], p["metric"]), []).append(round(p["value"], 6))
    tests = {(r["series"], r["metric"]): r for r in confirmed.to_dict("records")}
    for_suspects = [{"series": s, "metric": m, "values": values.get((s, m), []),
                     "verdict": verdicts.get((s, m), "unresolved"),
                     "combined": _finite((tests.get((s, m)) or {}).get("latest")),
                     "low": _finite((tests.get((s, m)) or {}).get("low")),
                     "high": _finite((tests.get((s, m)) or {}).get("high"))}
                    for s, m in zip(flagged["series"], flagged["metric"])]
    facts = {"run_dir": str(dirs[0]), "run_dirs": [str(d) for d in dirs], "rounds": done_rounds,
             "processes": len(dirs),
             "max_rounds": rounds,
             "n_cases": len(again), "controls": controls, "suspect_rounds": for_suspects,
             "unresolved": [f"{v['series']} {v['metric']}" for v in for_suspects
                            if v["verdict"] == "unresolved"],
             "control_tests": [record(r) for r in control.to_dict("records")],
             "disturbed": disturbed}
    return confirmed, facts


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None
