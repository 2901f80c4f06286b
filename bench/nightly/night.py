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
(``jitbench.nightly.recheck`` says why). Before that, a series whose scatter between nights needs it is
measured in more fresh processes the same night (``jitbench.nightly.repeats``).

The night's rooms: the history it is judged against (``reference``), its change measured side by
side (``change``), the recheck (``recheck``), the summary (``summary``); the scale-out pieces
(shards, merge) are ``jitbench.nightly.shards``. This module runs a night through them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.analysis.history import Thresholds, visibility
from jitbench.analysis.machine import machine_state
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.nightly import change, change_ab, creep, state
from jitbench.nightly import repeats as repeats_mod
from jitbench.nightly.options import NightOptions
from jitbench.nightly.recheck import recheck as run_recheck
from jitbench.nightly.past_nights import History, analyse
from jitbench.nightly.repeats import night_cases
from jitbench.nightly.summary import evaluation, profile_facts, summary
from jitbench.report.night_markdown import markdown
from jitbench.results.files import (NightSummary, load_acceptance, load_meta, write_summary,
                                    write_summary_markdown)
from jitbench.results.run_folder import AB, new_run_id


def nightly(cases: Sequence[Case], results_root: Path | str, reports_root: Path | str,
            options: NightOptions | None = None, **fields: Any) -> NightSummary:
    """One night: returns the summary (also written as JSON next to the history page).
    ``options`` (:class:`jitbench.nightly.options.NightOptions`), or its fields as keywords."""
    from jitbench.report import write_report

    o = options if options is not None else NightOptions(**fields)
    if o.thresholds is None:
        o = dataclasses.replace(o, thresholds=Thresholds())
    results_root, reports_root = Path(results_root), Path(reports_root)
    thresholds, run_id, recheck = o.thresholds, o.run_id, o.recheck
    if o.do_run:
        from jitbench.run import runner

        run_id = run_id or new_run_id()
        if (results_root / run_id / "results.jsonl").exists():  # never over a night's record
            raise UserError(f"--run-id {run_id!r}: {str(results_root / run_id)!r} holds a run "
                            f"already; name a new night (judge that one again with --no-run "
                            f"--run-id {run_id})")
        # a night from its first moment: a kill at any phase leaves it unjudged, never good
        night_dir = state.begin(results_root / run_id)
        runner.run(cases, results_root, run_id=run_id, calibrate=True, **o.runner_kw())
        state.finished(night_dir, "run")
        write_report(night_dir, reports_root / run_id)
        state.finished(night_dir, "report")
    # tonight is the run this night measured (or, judging with --no-run, the one named or the
    # latest), whatever else started in the folder since
    h = analyse(results_root, thresholds, latest=run_id)
    latest_dir = results_root / h.order[-1]
    # until its judgement is written, the night is no reference (a crash leaves it so)
    state.pending(latest_dir)
    if o.process_profile is None:  # judging with --no-run: as the night was measured
        o = dataclasses.replace(o, process_profile=profile_facts(
            h.metas[h.order[-1]])["process_profile"])
    if not (reports_root / h.order[-1] / "index.html").exists():
        write_report(latest_dir, reports_root / h.order[-1])
    machine = machine_state(h.df, h.metas, h.judged, thresholds.machine)
    plan = change.plan_for(results_root, h.judged, h.metas) if o.on_change == "ab" else None
    if plan is not None and plan.changes and not plan.blocked:
        return _change_night(h, plan, results_root, reports_root, o, machine)
    repeat_facts = None
    if o.do_run and o.max_processes > 1:  # repeat where the noise is left
        planned = (repeats_mod.plan(h.points, h.judged_against, thresholds, o.max_processes)
                   if machine["steady"] else {})  # a moved machine: no further round
        spent = load_meta(latest_dir).get("elapsed_s")
        budget = o.repeat_budget if o.repeat_budget is not None else (
            float(spent) if isinstance(spent, (int, float)) else 0.0)
        repeat_facts = repeats_mod.measure(latest_dir, planned, o.runner_kw(), budget)
        if repeat_facts["runs"]:  # rounds after the night's
            h = analyse(results_root, thresholds, latest=h.order[-1])
    suspects, confirmed, facts = h.tests, h.tests, None
    if not machine["steady"]:  # the machine, not the code, moved tonight: no step is judged
        confirmed, recheck = suspects.assign(regression=False), False
    # a decisive suspect (its own interval clears the history by the threshold) needs no
    # re-measurement unless asked (``recheck_decisive``); the others are re-measured in the
    # night's context
    decisive = (suspects["regression"] & suspects["decisive"].fillna(False).astype(bool)
                & (not o.recheck_decisive))
    # a series near a step (detectors.NEAR_Z) is re-measured as a suspect is: at the edge of
    # what it can see, more processes tell, not one night's luck
    near = suspects["near"].fillna(False).astype(bool)
    if ((suspects["regression"] & ~decisive) | near).any() and recheck:
        import pandas as pd

        pending = suspects.assign(regression=(suspects["regression"] & ~decisive) | near)
        confirmed, facts = run_recheck(h, results_root, thresholds, pending, o.runner_kw(),
                                       rounds=o.recheck_rounds)
        confirmed = pd.concat([confirmed, suspects[decisive]], ignore_index=True)
    base = summary(h, thresholds, suspects, confirmed, facts)
    if o.confirm_ab:
        cases = night_cases(latest_dir)
        for rec in base["confirmed"]:
            change.side_by_side(rec, cases, latest_dir / AB, o.process_profile,
                                o.on_progress)
    if plan is not None and plan.blocked and base["regression"]:
        # a change that could not run again: the step the history confirmed is that change's
        for rec in base["confirmed"]:
            rec["text"] = (rec.get("text") or "") + (
                "; tonight's change since the last good night (" + plan.last_good + "), not "
                "measured side by side: " + "; ".join(c.text() for c in plan.changes))
    verdict = {**base, **_software_or_machine(plan, base),
               "near": sorted(suspects.loc[near, "series"]) if recheck else [],
               "machine": machine, "repeats": repeat_facts,
               "machine_note": None if machine["steady"] else (
                   f"the machine ran every JIT-off mode x{machine['factor']:.2f} against its "
                   f"last {len(machine['compared_with'])} nights (more than "
                   f"{100 * machine['bound']:.0f}%, all together): no step is judged tonight "
                   f"({len(base['suspected'])} suspected); a real one is still there on the "
                   f"next steady night"),
               "change": None if plan is None else plan.facts()}
    if plan is not None and plan.blocked and not verdict["regression"]:
        verdict.update(_blocked_and_short(h, plan, results_root / h.order[-1]))
    return _finish(h, results_root, reports_root, thresholds,
                   {**verdict, "change_note": _change_note(plan, verdict)})


def _software_or_machine(plan: change.Plan | None, base: dict[str, Any]) -> dict[str, Any]:
    """Nothing that can move the code's numbers changed since the last good night: what the
    history confirmed is the machine's (drift, throttling, a moved baseline), not a software
    regression; but a compile count is the software's, never the machine's, and still fails
    the night."""
    if plan is None or plan.changes or not base["regression"]:
        return {}
    soft = [r for r in base["confirmed"] if r.get("metric") in SOFTWARE_METRICS]
    return {"machine_steps": [r for r in base["confirmed"] if r not in soft],
            "confirmed": soft, "regression": bool(soft)}


def _blocked_and_short(h: History, plan: change.Plan, latest_dir: Path) -> dict[str, Any]:
    """A change that could not run again leaves the night to the history; where the history
    is still too short to judge a series the change touches, the night could not see a step
    there: undecided (never a pass), and so no reference for the next night."""
    _, touched = change.touched(night_cases(latest_dir), plan.changes)
    touched -= set(change_ab.unmeasurable(latest_dir, touched,
                                          change_ab.reference_ok(plan))[0])  # not here
    tests = h.tests
    short = tests[(tests["needs"] > 0) & tests["case_id"].isin(touched)] if len(tests) \
        else tests
    if not len(short):
        return {}
    needs, undecided = int(short["needs"].max()), sorted(set(short["case_id"]))
    return {"undecided": undecided, "undecided_note": (
        f"UNDECIDED: {len(undecided)} case(s) touched by a change that could not "
        f"run again ({'; '.join(c.text() for c in plan.changes)}) and a history still "
        f"{needs} night(s) short of judging them: a step there could not be seen (not a pass;"
        f" keep the last good environment to measure a change side by side: jitbench nightly "
        f"--environments DIR --requirements FILE)")}


def _change_note(plan: change.Plan | None, result: dict[str, Any]) -> str | None:
    if plan is None:
        return None
    if plan.blocked:
        return (f"changed since the last good night ({plan.last_good}): "
                f"{'; '.join(c.text() for c in plan.changes)}; not measured side by side "
                f"({plan.blocked}): judged by the history")
    if plan.changes:
        return None
    steps = result.get("machine_steps") or []
    return (f"nothing changed since the last good night ({plan.last_good}): no software "
            f"regression is possible"
            + (f"; the history's {len(steps)} step(s) are the machine's: "
               + ", ".join(f"{r['case_id']} {r['metric']}" for r in steps) if steps else ""))


def _change_night(h: History, plan: change.Plan, results_root: Path, reports_root: Path,
                  o: NightOptions, machine: dict[str, Any]) -> dict[str, Any]:
    """Tonight's software changed: the touched case groups measured in the last good night's
    environment and tonight's, side by side (``jitbench.nightly.change_ab.measure``), in place of
    further processes and rechecks, within the time the night's own run took; the history's
    steps are shown, the A/B decides."""
    latest_dir, thresholds = results_root / h.order[-1], o.thresholds
    spent = load_meta(latest_dir).get("elapsed_s")
    facts = change_ab.measure(plan, night_cases(latest_dir), latest_dir, thresholds.steady,
                           process_profile=o.process_profile or "default",
                           time_limit=float(spent) if isinstance(spent, (int, float)) else None,
                           case_timeout=o.case_timeout, on_progress=o.on_progress,
                           pairs=o.change_pairs, pairing=o.pairing,
                           compile_threshold=thresholds.compile)
    state.finished(latest_dir, "ab")
    base = summary(h, thresholds, h.tests, h.tests.assign(regression=False), None)
    not_measurable = facts.get("not_measurable") or []
    counts = ", ".join(f"{n} {v}" for v, n in sorted(facts["verdicts"].items()))
    verdict = {
        **base, "metrics": {**base["metrics"], "ab_time": (
            "time per call, tonight's environment over the last good night's, in fresh "
            "process pairs side by side"), "ab_time_pooled": (
            "ab_time of the touched JIT cases together: the geometric mean per pair")},
        "confirmed": facts["slower"], "regression": bool(facts["slower"]), "change": facts,
        "smaller_steps": facts["smaller"], "undecided": facts["undecided"], "near": [],
        "machine": machine, "repeats": None, "machine_note": None,
        "history_steps": [f"{r['case_id']} {r['metric']}" for r in base["suspected"]],
        "not_measurable": not_measurable,
        "change_note": (
            f"changed since the last good night ({plan.last_good}): "
            f"{'; '.join(facts['changes'])}: {facts['n_touched']} touched cases measured in "
            f"both environments side by side ({facts.get('rounds') or 0} rounds of fresh "
            f"process pairs, {PAIRED.get(facts.get('pairing'), 'alternating')}"
            + "".join(f"; {c['rounds']} of them carried from {c['night']}, undecided with the "
                      f"same two environments" for c in facts.get("carried") or [])
            + f"): {counts or 'nothing measured'}"
            + (f"; {facts['pooled']['text']}" if facts.get("pooled") else "")
            + (f"; {len(not_measurable)} touched case(s) not measurable here (they do not "
               f"hold the night): " + "; ".join(
                   f"{r['case_id']} ({r['why']})" for r in not_measurable[:5])
               + (f" and {len(not_measurable) - 5} more" if len(not_measurable) > 5 else "")
               if not_measurable else "")),
        "undecided_note": (_undecided_note(facts, thresholds.steady)
                           if facts["undecided"] and not facts["slower"] else None)}
    return _finish(h, results_root, reports_root, thresholds, verdict)


def _undecided_note(facts: dict[str, Any], threshold: float) -> str:
    """Why a change night's A/B left cases undecided: still open, a first call neither
    established nor ruled out, never measured, lost since the last good night, or tonight's
    measurement could not run."""
    unmeasured = set(facts.get("not_measured") or [])
    lost = {r["case_id"]: r["why"] for r in facts.get("lost") or []}
    first = {r["case_id"]: f"{r['ratio']:.2f}x [{r['low']:.2f}, {r['high']:.2f}] in "
                           f"{r['pairs']} pairs" for r in facts.get("first_open") or []}
    open_ = [c for c in facts["undecided"]
             if c not in unmeasured and c not in lost and c not in first]
    error = facts.get("error")
    parts = (
        f"{len(first)} touched case(s) whose first call is slower by a step of "
        f"--compile-threshold neither established nor ruled out: "
        + "; ".join(f"{c} ({t})" for c, t in sorted(first.items())) if first else None,
        f"{len(open_)} touched case(s) neither slower nor the same after "
        f"{facts.get('rounds') or 0} pairs, a step of the {100 * threshold:.0f}% "
        f"threshold not ruled out: {', '.join(open_)}" if open_ else None,
        f"{len(unmeasured)} touched case(s) not measured side by side"
        + (f" ({error})" if error else
           " (no finished A/B holds them: a shard or the A/B stopped before them)")
        + f": {', '.join(sorted(unmeasured))}" if unmeasured else None,
        f"{len(lost)} touched case(s) ok on the last good night and failing in both "
        f"environments tonight (the machine, not the change?): "
        + "; ".join(f"{c} ({w})" for c, w in sorted(lost.items())) if lost else None,
        f"the side-by-side measurement could not run tonight: {error}"
        if error and not unmeasured else None)
    return "UNDECIDED: " + "; ".join(filter(None, parts)) + (
        " (not a pass)" if error else
        " (not a pass; the next night with the same two environments goes on from these "
        "pairs and measures only the cases left open)")


def _seen(h: History, result: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Each case's smallest step tonight could have seen, so that "nothing changed" reads
    "nothing of more than x%": on a change night the top of each touched case's A/B interval
    (a step above it is ruled out at the night's confidence), on a night judged by its history
    the step each JIT series' night shows as suspect 95% of the time (``visible_step``)."""
    bounds = (result.get("change") or {}).get("bounds") or {}
    if bounds:
        seen = [{"case_id": c, "up_to": hi - 1, "how": "A/B interval"}
                for c, hi in sorted(bounds.items())]
    else:
        t = h.tests
        rows = (t[(t["metric"] == "jit_ratio") & t["visible_step"].notna()]
                if len(t) and "visible_step" in t else t.iloc[0:0])
        seen = [{"case_id": r["case_id"], "up_to": float(r["visible_step"]),
                 "how": "history"} for r in rows.to_dict("records")]
    if not seen:
        return [], None
    worst = max(s["up_to"] for s in seen)
    return seen, (f"the smallest step tonight could see: at most {100 * max(worst, 0):.1f}% in "
                  f"every one of {len(seen)} case(s) "
                  f"({'measured side by side' if bounds else 'judged by the history'}; per case "
                  f"in the summary's 'seen')")


def _incomplete(latest_dir: Path, verdict: dict[str, Any]) -> dict[str, Any]:
    """A merged night some of whose shards never reached the merge measured only part of its
    cases: undecided (never a pass), naming the shards."""
    from jitbench.results.files import load_night

    missing = load_night(latest_dir).get("missing_shards") or []
    if not missing:
        return {}
    return {"missing_shards": missing,
            "undecided": sorted(set(verdict.get("undecided") or []) | {
                f"(shard {k})" for k in missing}),
            "undecided_note": "; ".join(filter(None, (
                verdict.get("undecided_note"),
                f"UNDECIDED: shard(s) {', '.join(missing)} never reached the merge: their cases "
                f"were not measured tonight (not a pass)")))}


# what the history measures that no state of the machine moves: a step there is software's
SOFTWARE_METRICS = ("compiles",)


# how a change night's pairs ran, as its note says it (``jitbench.run.options.PAIRINGS``)
PAIRED = {"alternating": "one process after the other, alternating",
          "duet": "duets: both processes at once, each on a core of its own"}


def _finish(h: History, results_root: Path, reports_root: Path, thresholds: Thresholds,
            verdict: dict[str, Any]) -> NightSummary:
    """The night's summary, one record: its verdict (the history's or the A/B's), what no
    fault may leave out (a lost shard, small steps that add up), what the next night is
    measured against and why earlier nights are not, then the history page and the summary's
    files; its judgement recorded as finished last."""
    from jitbench.report.history_page import write_history_page

    latest_dir = results_root / h.order[-1]
    verdict = {**verdict, **_incomplete(latest_dir, verdict)}
    verdict = {**verdict, **creep.judge(results_root, h, thresholds.steady, verdict)}
    # the environment the next night is measured against: tonight's unless it regressed (a CI
    # job upgrades the other of two environments, examples/nightly-gpu.yml)
    # and the nights after tonight's reference that could not be it, and why
    reference_night, skipped = state.last_good(results_root, h.judged)
    good = h.order[-1] if load_acceptance(latest_dir) or not (
        verdict["regression"] or verdict.get("undecided")) else reference_night
    them = "it" if len(h.waiting) == 1 else "them"
    seen, seen_note = _seen(h, verdict)
    record = NightSummary(
        **verdict, **profile_facts(h.metas[h.order[-1]]),
        last_good=None if good is None else {
            "run": good, "python": (h.metas[good].get("machine") or {}).get("executable")},
        waiting=h.waiting, unusable=skipped,
        unusable_note=state.unusable_note(skipped, reference_night),
        accepted=[{"run_id": r, **a} for r, a in h.accepted.items()],
        accepted_note="; ".join(
            f"{r} accepted as the reference ({a['reason']}, {a.get('accepted_at')})"
            for r, a in h.accepted.items()) or None,
        waiting_note=(f"Left out of tonight's reference: {', '.join(h.waiting)} (the machine "
                      f"moved on {them}, no night has judged {them} since)")
        if h.waiting else None,
        visible=visibility(h.tests, thresholds.steady), seen=seen, seen_note=seen_note,
        evaluation=evaluation(results_root, h, thresholds.steady))
    reports_root.mkdir(parents=True, exist_ok=True)
    write_history_page(h, results_root, reports_root, record)
    write_summary(reports_root, record)
    text = markdown(record, "index.html")
    write_summary_markdown(reports_root, text)
    write_summary(latest_dir, record)
    write_summary_markdown(latest_dir, text)
    state.finished(latest_dir, "judgement")
    return record
