"""``jitbench nightly``: run, add to the history, detect regressions, re-measure suspects,
write the history page and a machine-readable summary; exit 1 on a confirmed regression.

The statistics (which quantities, noise, thresholds, correction) are in
``jitbench.analysis.history``.
The
re-measurement ("recheck") puts each suspect back in the context it had on the night: every case
group its worker measured that night (same framework, worker group and device), in the night's
order, in a fresh run with its own calibration, so the worker's warm-up, the suspect's
neighbours and its position are what they were. A JIT-off case of those groups that was not
suspect is the control re-measured beside them: the ratios are drift-proof by construction,
but the probe-normalised times are not quite (they decide only with ``judge_absolute``), so
when the control itself reads as a step, the recheck's normalised-time verdicts are void
("disturbed"). The recheck is judged with the same
statistics against the same history (the night's own point left out), on the ratios alone
(``detect_regressions(whole_night=False)``), the correction counting only the suspects. It
adds a round of fresh processes at a time, up to ``--recheck-rounds`` (3),
until each suspect is known to be slower, the same or faster, the rounds' processes combined
(``_recheck`` says why). Before that, a series whose scatter between nights needs it is
measured in more fresh processes the same night (``jitbench.nightly.repeats``).

The scale-out pieces (shards, merge) are ``jitbench.nightly.shards``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.analysis.detectors import MACHINE_BOUND
from jitbench.analysis.history import (METRICS, Thresholds, detect_regressions, hlo_change,
                                    points_table, visibility)
from jitbench.analysis.machine import machine_speed, machine_state, waiting_nights
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.nightly import change
from jitbench.nightly import corpus as corpus_mod
from jitbench.nightly import evaluate
from jitbench.nightly import repeats as repeats_mod
from jitbench.nightly.repeats import night_cases, worker_groups
from jitbench.nightly.runs import comparable, run_dirs
from jitbench.results.run_folder import new_run_id
from jitbench.results.files import (PENDING, load_acceptance, load_meta,
                                   load_results, write_acceptance, write_summary)



# --------------------------------------------------------------------------- history

@dataclasses.dataclass
class History:
    """The runs under a results root and the verdict on the latest."""

    df: Any  # every row of every run
    order: list[str]  # run ids, oldest first
    metas: dict[str, dict[str, Any]]
    points: Any  # history.points_table
    tests: Any  # history.detect_regressions of the latest run
    judged: list[str]  # the runs measured under the latest run's protocol, oldest first
    # the latest run's reference: ``judged`` but for the nights a moved machine left unjudged
    # just before it (``jitbench.analysis.machine.waiting_nights``), the latest last
    reference: list[str] = dataclasses.field(default_factory=list)
    waiting: list[str] = dataclasses.field(default_factory=list)
    # the nights a team accepted (jitbench nightly --accept): {run id: reason, accepted_at}
    accepted: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def analyse(results_root: Path | str, thresholds: Thresholds | None = None) -> History:
    """The history under ``results_root`` and the verdict on its latest run, against the
    earlier runs measured the same way (:func:`comparable`)."""
    runs = run_dirs(results_root)
    if not runs:
        raise UserError(f"no runs under {str(results_root)!r}")
    df = load_results(runs)
    dirs = {load_meta(d).get("run_id") or d.name: d for d in runs}
    metas = {r: load_meta(d) for r, d in dirs.items()}
    order = list(metas)
    more = {r: repeats_mod.repeat_rows(d) for r, d in dirs.items()}
    points = points_table(df, metas, order, {r: rows for r, rows in more.items() if rows})
    judged = comparable(metas, order)
    waiting = waiting_nights(df, metas, judged, (thresholds or Thresholds()).machine)
    reference = [r for r in judged if r not in waiting]
    accepted = {r: said for r in order if (said := load_acceptance(dirs[r]))}
    # an accepted night starts the reference: the nights before it measured what it changed
    since = [r for r in reference[:-1] if r in accepted]
    if since:
        reference = reference[reference.index(since[-1]):]
    return History(df, order, metas, points, detect_regressions(points, reference, thresholds),
                   judged, reference, waiting, accepted)


def accept(results_root: Path | str, run_id: str, reason: str | None) -> dict[str, Any]:
    """``jitbench nightly --accept RUN_ID --reason TEXT``: the night ``run_id`` becomes the
    reference from the next night on (:func:`jitbench.nightly.change.is_good`; the history
    judges later nights against it and the nights after it), recorded with its reason."""
    import datetime as dt

    if not (reason or "").strip():
        raise UserError("--accept needs --reason TEXT: why this step is wanted (shown on the "
                        "history page and in every later summary)")
    runs = {load_meta(d).get("run_id") or d.name: d for d in run_dirs(results_root)}
    if run_id not in runs:
        known = ", ".join(list(runs)[-5:]) or "none"
        raise UserError(f"--accept {run_id!r}: no such night under {str(results_root)!r} "
                        f"(the latest: {known})")
    when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return write_acceptance(runs[run_id], reason.strip(), when)


def recheck_plan(cases: Sequence[Case], suspect_ids: set[str]) -> tuple[list[Case], list[str]]:
    """(cases to re-measure, control case ids): every case of the suspects' worker groups in
    the night's order, and the first JIT-off case among them that is not suspect (none when
    those workers measured no JIT-off mode)."""
    from jitbench.define.modes import MODES

    again = worker_groups(cases, suspect_ids)
    controls = [c.case_id for c in again if not MODES[(c.framework, c.mode)].jit
                and c.case_id not in suspect_ids]
    return again, controls[:1]


def _record(r: dict[str, Any]) -> dict[str, Any]:
    """A test row for the summary, with a sentence saying what moved and how far."""
    out = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
    if r.get("reference") is not None:
        noise = "" if r["z"] is None else (f", noise {100 * r['noise']:.1f}%, z {r['z']:.1f}, "
                                           f"q {r['q_value']:.2g}")
        interval = (f" [{r['low']:.4g}-{r['high']:.4g}]" if isinstance(r.get("low"), float)
                    and isinstance(r.get("high"), float) and r["low"] == r["low"]
                    and r["high"] == r["high"] else "")
        out["text"] = (f"{METRICS[r['metric']].doc}: {r['reference']:.4g} -> {r['latest']:.4g}"
                       f"{interval} ({100 * r['change']:+.1f}%){noise}, {r['n_previous']} "
                       f"earlier runs")
        if r.get("quantity") == "jit_time":  # jitbench.analysis.detectors.judge_night
            out["text"] += ("; judged on the JIT mode's own time against the machine, the "
                            "quieter of its two series (its JIT-off baseline moves on its own)")
    return out


def summary(h: History, thresholds: Thresholds, suspects, confirmed,
            recheck: dict[str, Any] | None) -> dict[str, Any]:
    def hlo(rec):  # did the compiled program change too? (jitbench.analysis.history.hlo_change)
        rec.update(hlo_change(h.df, h.judged, rec, thresholds.window))
        if rec["hlo_changed"] is not None and rec.get("text"):
            rec["text"] += ("; optimized HLO changed (fingerprint {hlo_reference_fingerprint} -> "
                            "{hlo_fingerprint})" if rec["hlo_changed"] else
                            "; optimized HLO unchanged ({hlo_fingerprint})").format(**rec)
        rec.update(_what_else(h, rec))
        if rec.get("text"):
            rec["text"] += (f"; began on {rec['began']}" + (
                f" or on {', '.join(h.waiting)} (not judged: the machine moved)"
                if h.waiting else "") + (
                f" (the night before: {rec['night_before']})" if rec["night_before"] else ""))
        if rec.get("text") and rec.get("also_changed"):
            rec["text"] += "; also changed that night: " + ", ".join(rec["also_changed"])
        if rec.get("text") and rec.get("ab_command"):
            rec["text"] += (f"; the software or the machine? measure both environments side "
                            f"by side: {rec['ab_command']}"
                            + (f" ({rec['ab_note']})" if rec.get("ab_note") else ""))
        return rec

    def records(t):
        return [] if t is None else [hlo(_record(r))
                                     for r in t.loc[t["regression"]].to_dict("records")]

    tests = h.tests
    short = tests[tests["needs"] > 0]
    needs = int(short["needs"].max()) if len(short) else 0
    other = len(h.order) - len(h.judged)
    return {"latest_run": h.order[-1], "runs": h.order, "rechecked": recheck is not None,
            "n_other_protocol": other,
            "protocol_note": (f"{other} earlier runs were measured under another protocol "
                              f"and are not compared") if other else None,
            "thresholds": dataclasses.asdict(thresholds),
            "metrics": {m.name: m.doc for m in METRICS.values()},
            "n_tested": int((tests["needs"] == 0).sum()),
            "n_short_history": len(short),
            "note": (f"{len(short)} series x metrics need up to {needs} more runs before "
                     f"they can be judged") if needs else None,
            "suspected": records(suspects), "confirmed": records(confirmed),
            "advisory": [hlo(_record(r)) for r in tests.loc[tests["advisory"]].to_dict("records")],
            "recheck": recheck, "regression": bool(len(records(confirmed))),
            "smaller_steps": [], "undecided": [], "undecided_note": None}


def _what_else(h: History, rec: dict[str, Any]) -> dict[str, Any]:
    """What an alert needs beside its step: the night it began (the night judged), the night
    before it, and what else changed between them: the series' compile count, the framework
    versions, the source file of its workload, the commit, the host, the GPUs (and whether
    tonight's GPU throttled)."""
    latest, before = h.order[-1], (h.judged[-2] if len(h.judged) > 1 else None)
    out: dict[str, Any] = {"began": latest, "night_before": before, "also_changed": []}
    if before is None:
        return out
    pts = h.points[(h.points["series"] == rec.get("series"))
                   & (h.points["metric"] == "compiles")]
    counts = {r: v for r, v in zip(pts["run_id"], pts["value"])}
    if before in counts and latest in counts and counts[before] != counts[latest]:
        out["also_changed"].append(f"compiles in the first call {counts[before]:g} -> "
                                   f"{counts[latest]:g}")
    new, old = h.metas.get(latest) or {}, h.metas.get(before) or {}
    out["also_changed"] += [c.text() for c in change.what_changed(old, new)
                            if c.kind in ("package", "python")]
    mine = rec.get("workload")
    was, now = ((m.get("workload_sources") or {}).get(mine) for m in (old, new))
    if was and now and was != now:
        out["also_changed"].append(f"the source of workload {mine} ({was} -> {now})")
    if old.get("git_commit") != new.get("git_commit"):
        out["also_changed"].append(f"commit {str(old.get('git_commit'))[:10]} -> "
                                   f"{str(new.get('git_commit'))[:10]}")
    for key in ("hostname", "cpu_model", "cpu_count"):
        a, b = (old.get("machine") or {}).get(key), (new.get("machine") or {}).get(key)
        if a != b:
            out["also_changed"].append(f"{key} {a} -> {b}")
    out["also_changed"] += _gpu_changes(old, new, h.df[h.df["run_id"] == latest])
    out.update(change.ab_command(old, new, rec))
    speed = machine_speed(h.df, before, latest)
    if speed is not None and abs(math.log(speed["factor"])) > math.log1p(MACHINE_BOUND):
        out["also_changed"].append(
            f"the machine: every JIT-off time x{speed['factor']:.2f} (median of "
            f"{speed['cases']} cases, 10-90%: x{speed['q10']:.2f}-x{speed['q90']:.2f})")
    return out


def _gpu_changes(old: dict[str, Any], new: dict[str, Any], rows) -> list[str]:
    """The GPU's side of what else changed: its model or driver between the two nights, and
    tonight's groups the GPU slowed down in (``gpu_throttled``)."""
    def gpus(meta):
        return [(g.get("name"), g.get("driver_version"))
                for g in (meta.get("machine") or {}).get("gpus") or []]

    out = []
    if gpus(old) != gpus(new):
        out.append(f"GPUs {gpus(old) or 'none'} -> {gpus(new) or 'none'}")
    if "gpu_throttled" in rows.columns:
        hot = rows[rows["gpu_throttled"].eq(True)]
        if len(hot):
            out.append(f"the GPU slowed down during {len(hot)} of tonight's rows "
                       f"({str(hot['gpu_throttle_note'].iloc[0])[:120]})")
    return out


def profile_facts(meta: dict[str, Any]) -> dict[str, Any]:
    """The night's process profile (``jitbench.run.options.PROCESS_PROFILES``) and, where it
    changes what is measured, a sentence saying so (the history page and the alerts show it)."""
    from jitbench.run.options import PROCESS_PROFILES

    name = meta.get("process_profile") or "default"
    note = None if name == "default" else (
        f"Measured in the {name!r} process profile ({PROCESS_PROFILES.get(name, name)}): a "
        f"step here is a change in the compiled code or the runtime, not the speedup a user's "
        f"multi-threaded process sees")
    return {"process_profile": name, "profile_note": note}


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


def _recheck(h: History, results_root: Path, thresholds: Thresholds, suspects, run_kw,
             rounds: int = RECHECK_ROUNDS):
    """Re-measure the suspects in their night's context, one round of fresh worker processes
    at a time, until each suspect's verdict is known (:func:`recheck_verdict`) or ``rounds``
    rounds are spent: confirm by measuring more, not by a majority of rounds.

    A round is one process, alone on its core: two at once on the two cores of the pinned
    profile read a JAX series' ratio with twice one process's scatter between processes
    (docs/lab/nightly-processes.md). After each round a suspect's point is the
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
    from jitbench.run.fresh_processes import run_rounds

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
        done = runner.run(cases, latest_dir / "rechecks", run_id=f"{new_run_id()}-r{i + 1}",
                          calibrate=True, **run_kw)
        meta = load_meta(done)
        dirs.append(done)
        per_round.append(points_table(load_results(done), {meta["run_id"]: meta},
                                      [meta["run_id"]]).to_dict("records"))
        state["pts"] = pd.DataFrame(combined_points(per_round))
        state["confirmed"] = detect_regressions(h.points, h.reference, thresholds,
                                                latest=state["pts"], only=only,
                                                whole_night=False)
        verdicts.clear()
        verdicts.update({(r["series"], r["metric"]): recheck_verdict(r, thresholds)
                         for r in state["confirmed"].to_dict("records")})

    done_rounds = run_rounds(measure, pending, max_rounds=rounds).count
    pts, confirmed = state["pts"], state["confirmed"]
    control = detect_regressions(h.points, h.reference, thresholds, latest=pts[
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
             "control_tests": [_record(r) for r in control.to_dict("records")],
             "disturbed": disturbed}
    return confirmed, facts


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


EVALUATED_NIGHTS = 30  # the detectors' window: enough to judge them, cheap enough nightly


def evaluation(results_root: Path, h: History, threshold: float) -> dict[str, Any] | None:
    """Each detector replayed on this history's last ``EVALUATED_NIGHTS`` comparable nights
    (``jitbench.nightly.evaluate``: false alerts, steps planted and found), for the history page
    and the summary; None before there is anything to judge."""
    if len(h.judged) <= evaluate.MIN_PREVIOUS:
        return None
    dirs = {load_meta(d).get("run_id") or d.name: d for d in run_dirs(results_root)}
    nights = [dirs[r] for r in h.judged[-EVALUATED_NIGHTS:] if r in dirs]
    every = evaluate.evaluate_all(corpus_mod.from_runs(nights), threshold)
    keep = ("doc", "false_alerts", "series_nights_judged", "detection", "delay_nights",
            "found", "by_visibility")
    return {"nights": every["nights"], "series": every["series"], "shipped": evaluate.SHIPPED,
            "positions": every["detectors"][evaluate.SHIPPED]["positions"],
            "detectors": {name: {k: r[k] for k in keep}
                          for name, r in every["detectors"].items()}}


def nightly(cases: Sequence[Case], results_root: Path | str, reports_root: Path | str, *,
            protocol, thresholds: Thresholds | None = None, do_run: bool = True,
            recheck: bool = True, recheck_rounds: int = RECHECK_ROUNDS,
            recheck_decisive: bool = False, case_timeout: float = 1800.0, command=None,
            on_progress=None, run_id: str | None = None,
            process_profile: str | None = None, confirm_ab: bool = False,
            max_processes: int = repeats_mod.MAX_PROCESSES,
            repeat_budget: float | None = None, on_change: str = "ab",
            change_pairs: int | None = None) -> dict[str, Any]:
    """One night: returns the summary (also written as JSON next to the history page).
    ``process_profile``: how its workers (and its rechecks') start
    (``jitbench.run.options.PROCESS_PROFILES``; None: the default, or with ``do_run`` off the
    profile the latest night was measured in, so its rechecks measure as it did).
    ``max_processes``: a series is measured in up to this many fresh processes, as many as
    its own scatter needs (``jitbench.nightly.repeats``), within ``repeat_budget`` seconds
    (None: as long as the night's own run took, so a night costs at most about twice one
    run). ``confirm_ab``: a confirmed step on a night whose software changed is measured in
    both environments side by side (``jitbench.nightly.change.side_by_side``) where the last
    good night's interpreter is still there. ``on_change``: ``ab`` (a night whose software
    changed since the last good night decides by measuring both environments side by side,
    ``jitbench.nightly.change``; a night where nothing changed reports what the history sees
    as the machine's) or ``history`` (every night decided by its history alone).
    ``change_pairs``: a change night measures exactly that many pairs (to record a corpus of
    change nights)."""
    from jitbench.report import write_report

    results_root, reports_root = Path(results_root), Path(reports_root)
    thresholds = thresholds or Thresholds()
    run_kw = {"protocol": protocol, "case_timeout": case_timeout, "command": command,
              "on_progress": on_progress, "process_profile": process_profile or "default"}
    if do_run:
        from jitbench.run import runner

        run_dir = runner.run(cases, results_root, run_id=run_id or new_run_id(), calibrate=True,
                             **run_kw)
        write_report(run_dir, reports_root / run_dir.name)
    h = analyse(results_root, thresholds)
    latest_dir = results_root / h.order[-1]
    # until its judgement is written, the night is no reference (a crash leaves it so)
    write_summary(latest_dir, {"latest_run": h.order[-1],
                               PENDING: "the night's judgement has not finished"})
    if process_profile is None:
        process_profile = profile_facts(h.metas[h.order[-1]])["process_profile"]
        run_kw["process_profile"] = process_profile
    if not (reports_root / h.order[-1] / "index.html").exists():
        write_report(latest_dir, reports_root / h.order[-1])
    machine = machine_state(h.df, h.metas, h.judged, thresholds.machine)
    plan = change.plan_for(results_root, h.judged, h.metas) if on_change == "ab" else None
    if plan is not None and plan.changes and not plan.blocked:
        return _change_night(h, plan, results_root, reports_root, thresholds, run_kw, machine,
                             change_pairs)
    repeat_facts = None
    if do_run and max_processes > 1:  # repeat where the noise is left
        planned = (repeats_mod.plan(h.points, h.reference, thresholds, max_processes)
                   if machine["steady"] else {})  # a moved machine: no further round
        spent = load_meta(latest_dir).get("elapsed_s")
        budget = repeat_budget if repeat_budget is not None else (
            float(spent) if isinstance(spent, (int, float)) else 0.0)
        repeat_facts = repeats_mod.measure(latest_dir, planned, run_kw, budget)
        if repeat_facts["runs"]:  # rounds after the night's
            h = analyse(results_root, thresholds)
    suspects, confirmed, facts = h.tests, h.tests, None
    if not machine["steady"]:  # the machine, not the code, moved tonight: no step is judged
        confirmed, recheck = suspects.assign(regression=False), False
    # a decisive suspect (its own interval clears the history by the threshold) needs no
    # re-measurement unless asked (``recheck_decisive``); the others are re-measured in the
    # night's context
    decisive = (suspects["regression"] & suspects["decisive"].fillna(False).astype(bool)
                & (not recheck_decisive))
    # a series near a step (detectors.NEAR_Z) is re-measured as a suspect is: at the edge of
    # what it can see, more processes tell, not one night's luck
    near = suspects["near"].fillna(False).astype(bool)
    if ((suspects["regression"] & ~decisive) | near).any() and recheck:
        import pandas as pd

        pending = suspects.assign(regression=(suspects["regression"] & ~decisive) | near)
        confirmed, facts = _recheck(h, results_root, thresholds, pending, run_kw,
                                    rounds=recheck_rounds)
        confirmed = pd.concat([confirmed, suspects[decisive]], ignore_index=True)
    result = summary(h, thresholds, suspects, confirmed, facts)
    result["near"] = sorted(suspects.loc[near, "series"]) if recheck else []
    if confirm_ab:
        cases = night_cases(latest_dir)
        for rec in result["confirmed"]:
            change.side_by_side(rec, cases, latest_dir / "ab", process_profile, on_progress)
    result["machine"] = machine
    result["repeats"] = repeat_facts
    result["machine_note"] = None if machine["steady"] else (
        f"the machine ran every JIT-off mode x{machine['factor']:.2f} against its last "
        f"{len(machine['compared_with'])} nights (more than {100 * machine['bound']:.0f}%, all "
        f"together): no step is judged tonight ({len(result['suspected'])} suspected); a "
        f"real one is still there on the next steady night")
    result["change"] = None if plan is None else plan.facts()
    if plan is not None and not plan.changes and result["regression"]:
        # nothing that can move the code's numbers changed: what the history saw is the
        # machine's (drift, throttling, a moved baseline), not a software regression
        result.update(machine_steps=result["confirmed"], confirmed=[], regression=False)
    if plan is not None and plan.blocked and result["regression"]:
        # a change that could not run again: the step the history confirmed is that change's
        for rec in result["confirmed"]:
            rec["text"] = (rec.get("text") or "") + (
                "; tonight's change since the last good night (" + plan.reference + "), not "
                "measured side by side: " + "; ".join(c.text() for c in plan.changes))
    result["change_note"] = _change_note(plan, result)
    _finish(h, results_root, reports_root, thresholds, result)
    return result


def _change_note(plan: change.Plan | None, result: dict[str, Any]) -> str | None:
    if plan is None:
        return None
    if plan.blocked:
        return (f"changed since the last good night ({plan.reference}): "
                f"{'; '.join(c.text() for c in plan.changes)}; not measured side by side "
                f"({plan.blocked}): judged by the history")
    if plan.changes:
        return None
    steps = result.get("machine_steps") or []
    return (f"nothing changed since the last good night ({plan.reference}): no software "
            f"regression is possible"
            + (f"; the history's {len(steps)} step(s) are the machine's: "
               + ", ".join(f"{r['case_id']} {r['metric']}" for r in steps) if steps else ""))


def _change_night(h: History, plan: change.Plan, results_root: Path, reports_root: Path,
                  thresholds: Thresholds, run_kw: dict[str, Any], machine: dict[str, Any],
                  pairs: int | None = None) -> dict[str, Any]:
    """Tonight's software changed: the touched case groups measured in the last good night's
    environment and tonight's, side by side (``jitbench.nightly.change.measure``), in place of
    further processes and rechecks, within the time the night's own run took; the history's
    steps are shown, the A/B decides."""
    latest_dir = results_root / h.order[-1]
    spent = load_meta(latest_dir).get("elapsed_s")
    facts = change.measure(plan, night_cases(latest_dir), latest_dir, thresholds.steady,
                           process_profile=run_kw["process_profile"],
                           time_limit=float(spent) if isinstance(spent, (int, float)) else None,
                           case_timeout=run_kw["case_timeout"],
                           on_progress=run_kw["on_progress"], pairs=pairs)
    result = summary(h, thresholds, h.tests, h.tests.assign(regression=False), None)
    result["metrics"]["ab_time"] = ("time per call, tonight's environment over the last good "
                                    "night's, in fresh process pairs side by side")
    result["metrics"]["ab_time_pooled"] = ("ab_time of the touched JIT cases together: the "
                                           "geometric mean per pair")
    result.update(confirmed=facts["slower"], regression=bool(facts["slower"]), change=facts,
                  smaller_steps=facts["smaller"], undecided=facts["undecided"],
                  near=[], machine=machine, repeats=None, machine_note=None, history_steps=[
                      f"{r['case_id']} {r['metric']}" for r in result["suspected"]])
    counts = ", ".join(f"{n} {v}" for v, n in sorted(facts["verdicts"].items()))
    result["change_note"] = (
        f"changed since the last good night ({plan.reference}): "
        f"{'; '.join(facts['changes'])}: {facts['n_touched']} touched cases measured in both "
        f"environments side by side ({facts.get('rounds') or 0} rounds of fresh process "
        f"pairs): {counts or 'nothing measured'}"
        + (f"; {facts['pooled']['text']}" if facts.get("pooled") else ""))
    if facts["undecided"] and not result["regression"]:
        result["undecided_note"] = (
            f"UNDECIDED: {len(facts['undecided'])} touched case(s) neither slower nor the same "
            f"after {facts.get('rounds') or 0} pairs, a step of the "
            f"{100 * thresholds.steady:.0f}% threshold not ruled out: "
            f"{', '.join(facts['undecided'])} (not a pass)")
    _finish(h, results_root, reports_root, thresholds, result)
    return result


def _finish(h: History, results_root: Path, reports_root: Path, thresholds: Thresholds,
            result: dict[str, Any]) -> None:
    """What every night's summary ends with, the history page and the summary's files."""
    from jitbench.report.history_page import write_history_page

    latest_dir = results_root / h.order[-1]
    # the environment the next night is measured against: tonight's unless it regressed (a CI
    # job upgrades the other of two environments, examples/nightly-gpu.yml)
    good = h.order[-1] if load_acceptance(latest_dir) or not (
        result["regression"] or result.get("undecided")) else change.last_good(results_root,
                                                                               h.judged)
    result["last_good"] = None if good is None else {
        "run": good, "python": (h.metas[good].get("machine") or {}).get("executable")}
    result["waiting"] = h.waiting
    result["accepted"] = [{"run_id": r, **a} for r, a in h.accepted.items()]
    result["accepted_note"] = "; ".join(
        f"{r} accepted as the reference ({a['reason']}, {a.get('accepted_at')})"
        for r, a in h.accepted.items()) or None
    result.update(profile_facts(h.metas[h.order[-1]]))
    them = "it" if len(h.waiting) == 1 else "them"
    result["waiting_note"] = (
        f"Left out of tonight's reference: {', '.join(h.waiting)} (the machine moved on "
        f"{them}, no night has judged {them} since)") if h.waiting else None
    result["visible"] = visibility(h.tests, thresholds.steady)
    result["evaluation"] = evaluation(results_root, h, thresholds.steady)
    reports_root.mkdir(parents=True, exist_ok=True)
    write_history_page(h, results_root, reports_root, result)
    write_summary(reports_root, result)
    write_summary(latest_dir, result)
