"""A change night's A/B (``jitbench.nightly.change`` says what changed and builds the two
arms): the touched case groups measured in the last good night's environment and tonight's,
pairs added while a verdict is open (at least :data:`MIN_PAIRS` whatever the night's length,
then up to :data:`MAX_PAIRS` within a time limit), judged against the night's one threshold
(``jitbench.nightly.change_judge.judged``): a touched case B measures ``slower`` than A whose interval does not rule out
a step of the threshold fails the night; one whose interval rules it out is named as a smaller
step; one still open with the step not ruled out is ``undecided`` (never a pass); and a pooled
verdict over the touched JIT cases says what the change does to them as a whole.

A change that touches more cases than one night's time limit can decide (a jitbench upgrade
touches every case) is decided over nights: an undecided night's pairs are carried to the next
night that measures the same two environments (:func:`carried`), which measures only the cases
they left open, so the reference never stops for want of time.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Sequence

from jitbench.define.workload import Case
from jitbench.nightly.change import Plan, touched
from jitbench.nightly.change_judge import (FAMILY_CONFIDENCE, confidence, is_jit,  # noqa: F401
                                           judge_runs, judged)
from jitbench.results.files import load_meta
from jitbench.results.run_folder import CHANGE

# pairs for a case whose verdict is open: at least MIN_PAIRS whatever the night's length, then
# up to MAX_PAIRS while the time limit (the night's own run: a change night costs at most about
# twice an unchanged one) allows; the verdict looks at LOOK_PAIRS and at MAX_PAIRS, the error
# rate split over the looks (``jitbench.analysis.ab_verdicts``)
MIN_PAIRS = 12
MAX_PAIRS = 30
LOOK_PAIRS = (9, 12, 20)
TOLERANCE = 0.02  # ``same``: the interval inside 1/1.02 .. 1.02 (a decided case stops)
# the least time limit of a change night's A/B, whatever the night's own run took: a short
# night (a quick grid, 16 s) left cases open at MIN_PAIRS that MAX_PAIRS would decide, and an
# open case holds the night (its pairs are added only while a case is open)
MIN_TIME_LIMIT = 300.0
# seconds of sampling per case group and process on a night whose workers are pinned (the
# ``stable`` profile): there a process lands close to the next, and 0.3 s (``jitbench ab``'s
# default, made for unpinned workers) leaves a mode of a 25 ms call a handful of samples, whose
# own scatter then dominates a pair's (docs/lab/duet-pairs/index.md, "Duet pairs in the engine")
PINNED_BUDGET = 1.5
# the undecided nights (since the last good one) whose pairs a change night carries on
MAX_CARRIED = 4


def pairing_for(choice: str, cases: Sequence[Case], process_profile: str) -> str:
    """How the A/B's pairs run (``jitbench.run.ab_arms.PAIRINGS``): ``auto`` is ``duet``
    where the night's workers are pinned to one core each (the ``stable`` profile), every case
    to measure runs on the CPU and this process may use two cores, ``alternating``
    otherwise; a pairing named is checked (UserError where a duet cannot run)."""
    from jitbench.run import ab_arms

    if choice == "auto":
        duet = (process_profile == "stable" and all(c.device == "cpu" for c in cases)
                and len(ab_arms.usable_cores()) >= 2)
        return "duet" if duet else "alternating"
    if choice == "duet":
        ab_arms.duet_cores(cases)
    return choice


def settings(n_touched: int, process_profile: str, time_limit: float | None,
             pairs: int | None = None, pairing: str = "alternating"):
    """The A/B's settings; ``pairs``: exactly that many pairs whatever the verdicts and the
    time (to record a corpus of change nights for ``--evaluate``)."""
    from jitbench.run import ab_arms

    pinned = process_profile == "stable" or pairing == "duet"
    if time_limit is not None:
        time_limit = max(time_limit, MIN_TIME_LIMIT)
    rule = ab_arms.Settings(max_pairs=MAX_PAIRS, tolerance=TOLERANCE,
                            confidence=confidence(n_touched), time_limit=time_limit,
                            min_pairs=MIN_PAIRS, process_profile=process_profile,
                            look_pairs=LOOK_PAIRS, pairing=pairing,
                            budget=PINNED_BUDGET if pinned else ab_arms.PROTOCOL.budget)
    return dataclasses.replace(rule, max_pairs=pairs, fixed=True, time_limit=None) \
        if pairs else rule


def measure(plan: Plan, cases: Sequence[Case], night_dir: Path, threshold: float, *,
            process_profile: str, time_limit: float | None, case_timeout: float = 1800.0,
            on_progress: Callable | None = None, pairs: int | None = None,
            pairing: str = "auto", compile_threshold: float | None = None,
            results_root: Path | None = None) -> dict[str, Any]:
    """The A/B of the touched case groups (``plan``'s arms) under ``night_dir/change/``; the
    facts for the summary: :func:`judged`'s over every finished A/B run of the night,
    ``slower`` (its ``fails``: what fails the night), each record with its ratio, interval,
    pairs and a sentence (``text``) that names the change. ``pairing``: :func:`pairing_for`'s
    choice.

    What the night could not run (``skipped``: a device or a framework this machine lacks) is
    not measurable here: named with its reason, never measured, never holding the night. An
    A/B the night holds already counts only when it finished (a sharded night's, one per
    shard; the same night judged again); a touched case that no finished A/B measured is
    measured now, except on a merged night (its shards' machines measured it; the judge's
    may not be able to): there it is "not measured", undecided, never clear."""
    from jitbench.errors import UserError
    from jitbench.results.files import load_night
    from jitbench.run import ab_arms

    again, ids = touched(cases, plan.changes)
    ref_ok = reference_ok(plan)
    here, lost = unmeasurable(night_dir, ids, ref_ok)
    again = [c for c in again if c.case_id not in here and c.case_id not in lost]
    ids = ids - set(here) - set(lost)
    facts = {**plan.facts(), "n_cases": len(again), "n_touched": len(ids),
             "smaller": [], "undecided": [], "pooled": None, "verdicts": {}, "run": None,
             "threshold": threshold,
             "not_measurable": [{"case_id": c, "why": w} for c, w in sorted(here.items())],
             "not_measured": [], "lost": [],
             # ran on the last good night, skipped tonight: the environment lost it (a jaxlib
             # without its CUDA plugin, a framework gone), which fails the night
             "slower": [{"case_id": c, "metric": "ab_status", "ratio": None, "low": None,
                         "high": None, "reference": 1.0, "latest": None, "change": None,
                         "noise": None, "q_value": None,
                         "text": f"{w}; what changed: "
                                 + "; ".join(ch.text() for ch in plan.changes)}
                        for c, w in sorted(lost.items())]}
    if not again:
        return facts
    chosen = settings(len(ids), process_profile, time_limit, pairs,
                      pairing_for(pairing, again, process_profile))
    runs = recorded(night_dir)
    # a night's pairs carry on only where the pairs are measured the same way (not a corpus's
    # fixed count of pairs)
    earlier = [] if pairs else carried(plan, night_dir, results_root, chosen)
    covered = _measured_ids(runs) | decided_before(earlier, plan, ids, threshold,
                                                    compile_threshold, ref_ok)
    missing = [c for c in again if c.case_id in ids and c.case_id not in covered]
    # a merged night's shards measured its cases on their machines: the judge's may not
    measure_now = bool(missing) and load_night(night_dir).get("kind") != "merged"
    error = arm_a_moved(plan, sorted({c.framework for c in missing})) if measure_now else None
    if measure_now and not error:
        todo, _ = touched(again, [_Only({c.case_id for c in missing})])
        try:
            runs.append(ab_arms.run_ab(todo, night_dir / CHANGE, (plan.arm_a, plan.arm_b),
                                       chosen, case_timeout=case_timeout,
                                       on_progress=on_progress,
                                       command=["jitbench", "nightly", "(change night)"],
                                       watch=ids))
        except UserError as exc:  # an arm that cannot run (its interpreter lacks something)
            error = ("the side-by-side measurement could not run: "
                     + str(exc).replace("--a:", "the last good night's environment (arm A):")
                     .replace("--b:", "tonight's environment (arm B):"))
    if not runs and not earlier:
        return {**facts, "undecided": sorted(ids), "not_measured": sorted(ids),
                "error": error}
    said = judge_runs(runs, plan, ids, threshold, compile_threshold, ref_ok, earlier)
    return {**facts, **said, "not_measurable": facts["not_measurable"] + said["not_measurable"],
            "slower": facts["slower"] + said["slower"], "error": error}


def carried(plan: Plan, night_dir: Path, results_root: Path | None = None,
            chosen: Any = None) -> list[tuple[str, list[Path]]]:
    """(night, its finished A/B runs) of the undecided nights since the last good one that
    measured the same two environments as tonight (at most :data:`MAX_CARRIED`, oldest
    first): judged against the same last good night, nothing changed between that night and
    tonight (``jitbench.nightly.change.what_changed``), the same two arms and, with
    ``chosen`` (tonight's A/B settings), pairs taken the same way (pairing, budget, process
    profile). Their pairs are tonight's as well: each pair ran side by side, whatever the
    night. ``results_root``: the history's folder (a shard's run lies elsewhere)."""
    from jitbench.nightly.change import what_changed
    from jitbench.results.files import load_summary

    root, tonight = Path(results_root or Path(night_dir).parent), load_meta(night_dir)
    same = ("pairing", "budget", "process_profile", "tolerance", "fixed")
    specs = tuple(arm.spec if arm is not None else None for arm in (plan.arm_a, plan.arm_b))
    out: list[tuple[str, list[Path]]] = []
    for night in plan.skipped:  # newest first
        folder = root / str(night.get("run_id"))
        said = load_summary(folder)
        if (said.get("pending") or said.get("regression") or not said.get("undecided")
                or (said.get("change") or {}).get("reference") != plan.last_good
                or what_changed(load_meta(folder), tonight)):
            continue
        runs = [d for d in recorded(folder) if _same_ab(load_meta(d), specs, chosen, same)]
        if runs:
            out.append((folder.name, runs))
        if len(out) == MAX_CARRIED:
            break
    return out[::-1]


def _same_ab(meta: dict[str, Any], specs: tuple[Any, ...], chosen: Any,
             keys: Sequence[str]) -> bool:
    ab = meta.get("ab") or {}
    if tuple((ab.get("arms") or {}).get(a, {}).get("spec") for a in ("a", "b")) != specs:
        return False
    if chosen is None:
        return True
    said = ab.get("settings") or {}
    return all(said.get(k) == getattr(chosen, k) for k in keys)


def decided_before(earlier: Sequence[tuple[str, Sequence[Path]]], plan: Plan, ids: set[str],
                   threshold: float, compile_threshold: float | None = None,
                   ref_ok: set[str] | None = None) -> set[str]:
    """The touched cases the pairs of ``earlier`` nights (:func:`carried`) decided: not
    measured again tonight."""
    if not earlier:
        return set()
    return set(judge_runs([], plan, ids, threshold, compile_threshold, ref_ok,
                          earlier)["decided"])


def reference_ok(plan: Plan) -> set[str] | None:
    """The cases the last good night measured ``ok`` (None where its folder is not known)."""
    from jitbench.results.files import read_rows

    if not plan.last_good_dir or not (Path(plan.last_good_dir) / "results.jsonl").is_file():
        return None
    return {r.get("case_id") for r in read_rows(Path(plan.last_good_dir) / "results.jsonl")
            if r.get("status") == "ok"}


def _normal(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name.lower())


def arm_a_moved(plan: Plan, frameworks: Sequence[str]) -> str | None:
    """Why arm A is not what the reference night measured, or None: its interpreter's
    packages (``jitbench.run.ab_arms.probe``) against the distributions the reference night
    recorded (an environment upgraded since, e.g. after ``--accept`` of an older night, would
    otherwise be measured as if it were the reference). Only the packages both record, but
    jitbench itself (its own change is the night's ``jitbench`` change), are compared."""
    from jitbench.errors import UserError
    from jitbench.run import ab_arms

    recorded_then = {_normal(k): v for k, v in plan.last_good_distributions}
    if not recorded_then or plan.arm_a is None:
        return None
    try:
        now = ab_arms.probe(plan.arm_a, frameworks)["packages"]
    except UserError as exc:
        return f"the last good night's environment cannot run: {exc}"
    moved = [f"{name} {recorded_then[_normal(name)]} -> {version}"
             for name, version in sorted(now.items())
             if _normal(name) in recorded_then and _normal(name) != "jitbench"
             and recorded_then[_normal(name)] != version]
    if not moved:
        return None
    return (f"arm A's interpreter is not what the last good night ({plan.last_good}) measured: "
            f"{', '.join(moved)} moved since; measuring it would not measure tonight's change "
            f"(restore that environment, or accept tonight with --accept RUN_ID --reason TEXT)")


@dataclasses.dataclass(frozen=True)
class _Only:
    """A change that touches exactly these case ids (the groups left to measure)."""

    ids: frozenset | set

    def touches(self, case: Case) -> bool:
        return case.case_id in self.ids


def unmeasurable(night_dir: Path, ids: set[str], reference: set[str] | None = None
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """({case id: why} of the touched cases tonight's own run could not measure on this
    machine (every row ``skipped``: a device or a framework it lacks) and the last good night
    could not either; {case id: why} of those it could (``reference``: the cases it measured
    ``ok``): lost since, a regression of the environment or the machine, never "not
    measurable")."""
    from jitbench.results.files import read_rows

    rows = read_rows(Path(night_dir) / "results.jsonl")
    said: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("case_id") in ids:
            said.setdefault(r["case_id"], []).append(r)
    here, lost = {}, {}
    for c, rs in said.items():
        if not all(r.get("status") == "skipped" for r in rs):
            continue
        reason = str(rs[0].get("error") or "skipped")[:200]
        if reference is not None and c in reference:
            lost[c] = f"ok on the last good night, skipped tonight: {reason}"
        else:
            here[c] = "not measurable here: " + reason
    return here, lost


def _measured_ids(runs: Sequence[Path]) -> set[str]:
    from jitbench.results.files import read_rows

    return {r.get("case_id") for d in runs for r in read_rows(Path(d) / "results.jsonl")}


def recorded(night_dir: Path) -> list[Path]:
    """The A/B runs a night holds already and that finished (one per shard that measured a
    change); one that a kill or a time limit stopped is never judged on what it reached."""
    folder = Path(night_dir) / CHANGE
    return sorted(d for d in folder.iterdir() if (d / "results.jsonl").is_file()
                  and (d / "meta.json").is_file() and load_meta(d).get("status") == "complete"
                  and "ab" in load_meta(d)) if folder.is_dir() else []
