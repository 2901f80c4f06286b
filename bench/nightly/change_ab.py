"""A change night's A/B (``jitbench.nightly.change`` says what changed and builds the two
arms): the touched case groups measured in the last good night's environment and tonight's,
pairs added while a verdict is open (at least :data:`MIN_PAIRS` whatever the night's length,
then up to :data:`MAX_PAIRS` within a time limit), judged against the night's one threshold
(:func:`judged`): a touched case B measures ``slower`` than A whose interval does not rule out
a step of the threshold fails the night; one whose interval rules it out is named as a smaller
step; one still open with the step not ruled out is ``undecided`` (never a pass); and a pooled
verdict over the touched JIT cases says what the change does to them as a whole.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Sequence

from jitbench.define.workload import Case
from jitbench.nightly.change import FOLDER, Plan, touched
from jitbench.results.files import load_meta

# a touched case is called slower when its interval of time B / A lies above 1.00x at this
# confidence, shared out over the touched cases and the pooled verdict (Bonferroni): one alert
# a night at most 5%
FAMILY_CONFIDENCE = 0.95
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
# own scatter then dominates a pair's (docs/lab/nightly-team.md, "Duet pairs in the engine")
PINNED_BUDGET = 1.5


def confidence(n_touched: int) -> float:
    """Each verdict's confidence: :data:`FAMILY_CONFIDENCE` shared out over the touched cases
    and the pooled verdict."""
    return 1.0 - (1.0 - FAMILY_CONFIDENCE) / max(1, n_touched + 1)


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


def is_jit(case_id: str) -> bool:
    """Whether a case id names a JIT mode (its framework and mode words, as
    ``jitbench.define.workload.Case.case_id`` joins them)."""
    from jitbench.define.modes import MODES

    words = case_id.split("-")
    return any(MODES[(a, b)].jit for a, b in zip(words, words[1:]) if (a, b) in MODES)


def _interval_text(ratio: float, lo: float, hi: float, pairs: int, threshold: float) -> str:
    t = 100 * threshold
    return (f"{ratio:.3f}x [{lo:.3f}, {hi:.3f}] in {pairs} fresh process pairs "
            f"({100 * (ratio - 1):+.1f}%, "
            + (f"all of it beyond the {t:.0f}% threshold" if lo >= 1 + threshold else
               f"a step of the {t:.0f}% threshold not ruled out" if not hi < 1 + threshold
               else f"a step of the {t:.0f}% threshold ruled out") + ")")


def _statuses(text: Any) -> dict[str, int]:
    """An arm's ``status_a``/``status_b`` ("ok 12, mismatch 1") as counts."""
    out: dict[str, int] = {}
    for part in str(text or "").split(","):
        words = part.split()
        if len(words) == 2 and words[1].isdigit():
            out[words[0]] = int(words[1])
    return out


def judged(rows, units, ids: set[str], plan: Plan, settings, threshold: float,
           compile_threshold: float | None = None, first_units=None,
           reference_ok: set[str] | None = None) -> dict[str, Any]:
    """Each touched case's verdict against the threshold
    (``jitbench.analysis.ab_verdicts.against_threshold``) and the pooled verdict of the JIT
    modes' touched cases: ``fails`` (records: the night fails), ``smaller`` (records: slower
    by less than the threshold, named), ``undecided`` (case ids: the step not ruled out,
    nothing decided, or never measured), ``not_measurable`` (records: a case neither arm
    could run here, with the reason), ``verdicts`` (counts), ``pooled``.

    Beyond the time per call: a case ``ok`` in A that fails or mismatches in B fails the
    night; one that compiles more often in B than in A fails it (a compile count is software,
    never the machine's); and with ``compile_threshold`` and ``first_units`` (the pairs' log
    ratios of the first call, :func:`jitbench.analysis.ab_verdicts.pair_units`), a first call
    (trace and compile) slower in B by a step of that threshold fails it too. A case failing
    in both arms is not measurable here only when the last good night could not run it either
    (``reference_ok``: the cases it measured ``ok``); else the machine lost it since:
    undecided, never a pass. A case failing in A and ``ok`` in B was fixed: clear."""
    from jitbench.analysis import ab_verdicts

    changed = "; ".join(c.text() for c in plan.changes)
    out: dict[str, Any] = {"fails": [], "smaller": [], "undecided": [], "verdicts": {},
                           "not_measurable": [], "not_measured": [], "bounds": {},
                           "lost": [], "ratios": {}}

    def record(r: dict[str, Any], what: str, metric: str = "ab_time",
               interval: tuple[float, float, float] | None = None,
               detail: str | None = None) -> dict[str, Any]:
        ratio, lo, hi = interval or tuple(float(r[k]) for k in ("ratio", "ci_low", "ci_high"))
        told = detail or _interval_text(ratio, lo, hi, int(r["pairs"]), threshold)
        return {"case_id": r["case_id"], "metric": metric, "workload": r.get("workload"),
                "framework": r.get("framework"), "mode": r.get("mode"), "ratio": ratio,
                "low": lo, "high": hi, "pairs": int(r["pairs"]),
                "clears_threshold": lo == lo and lo >= 1 + threshold,
                # the history table's columns: A is the reference, B tonight
                "reference": 1.0, "latest": ratio, "change": ratio - 1, "noise": None,
                "q_value": None,
                "text": (f"{what}: tonight's environment / the last good night's "
                         f"({plan.reference}), measured side by side: {told}"
                         + "; what changed: " + changed)}

    nan = float("nan")
    by_first = ({c: list(g["log_ratio"]) for c, g in first_units.groupby("case_id")}
                if first_units is not None and len(first_units) else {})
    seen = set()
    for r in rows.to_dict("records"):
        if r["case_id"] not in ids:
            continue
        seen.add(r["case_id"])
        a, b = _statuses(r.get("status_a")), _statuses(r.get("status_b"))
        err_a, err_b = (e if isinstance(e, str) and e else None
                        for e in (r.get("error_a"), r.get("error_b")))
        bad_b = {k: n for k, n in b.items() if k not in ("ok", "skipped")}
        why = (f"A: {r.get('status_a') or 'no row'}; B: {r.get('status_b') or 'no row'}"
               + (f" ({(err_b or err_a)[:200]})" if err_b or err_a else ""))
        if not a.get("ok") and not b.get("ok"):  # neither arm could run it here
            if reference_ok is not None and r["case_id"] in reference_ok:
                out["verdicts"]["lost"] = out["verdicts"].get("lost", 0) + 1
                out["undecided"].append(r["case_id"])
                out["lost"].append({"case_id": r["case_id"], "why": (
                    f"ok on the last good night ({plan.reference}), failing in both "
                    f"environments tonight: {why}")})
                continue
            out["verdicts"]["not measurable"] = out["verdicts"].get("not measurable", 0) + 1
            out["not_measurable"].append({"case_id": r["case_id"], "why": why})
            continue
        if not a.get("ok"):  # failing in the last good environment, ok in tonight's: fixed
            out["verdicts"]["fixed"] = out["verdicts"].get("fixed", 0) + 1
            continue
        n_a, n_b = max(1, sum(a.values())), max(1, sum(b.values()))
        bad_a = {k: n for k, n in a.items() if k not in ("ok", "skipped")}
        # it ran in the last good environment and fails in tonight's: a wrong answer where A
        # had none, or failures in a quarter more of B's processes than of A's (and at least
        # two: one crash in a dozen pairs is the host's as likely as the software's)
        if (bad_b.get("mismatch", 0) and not bad_a.get("mismatch", 0)) or (
                sum(bad_b.values()) >= 2
                and sum(bad_b.values()) / n_b - sum(bad_a.values()) / n_a >= 0.25):
            out["verdicts"]["fails in B"] = out["verdicts"].get("fails in B", 0) + 1
            status = ", ".join(f"{k} {n}" for k, n in sorted(bad_b.items()))
            out["fails"].append(record(
                r, "fails tonight", metric="ab_status", interval=(nan, nan, nan),
                detail=(f"ok in A ({r.get('status_a')}), {status} in B"
                        + (f": {err_b[:300]}" if err_b else ""))))
            continue
        out["verdicts"][r["verdict"]] = out["verdicts"].get(r["verdict"], 0) + 1
        if isinstance(r.get("ci_high"), float) and r["ci_high"] == r["ci_high"]:
            out["bounds"][r["case_id"]] = float(r["ci_high"])  # no step above it, at confidence
        if isinstance(r.get("ratio"), float) and r["ratio"] == r["ratio"] and r["ratio"] > 0:
            out["ratios"][r["case_id"]] = float(r["ratio"])  # every step: the creep's chain
        said = ab_verdicts.against_threshold(r["verdict"], float(r["ci_high"]), threshold)
        if said == "fails":
            out["fails"].append(record(r, "slower"))
        elif said == "smaller":
            out["smaller"].append(record(r, "slower by less than the threshold"))
        elif said == "undecided":
            out["undecided"].append(r["case_id"])
        ca, cb = list(r.get("compiles_a") or []), list(r.get("compiles_b") or [])
        # every process of B compiled more often than any of A's, in a JIT mode (one process
        # that compiled once more, a retried group, is not a retrace)
        if ca and cb and min(cb) > max(ca) and is_jit(r["case_id"]):
            out["fails"].append(record(
                r, "compiles more often", metric="ab_compiles",
                interval=(max(cb) / max(1, max(ca)), nan, nan),
                detail=f"compilations in the first call {ca} -> {cb}"))
        first = by_first.get(r["case_id"]) or []
        if compile_threshold is not None and len(first) >= 3:
            verdict, _, ratio, lo, hi = ab_verdicts.decide_interval(
                first, tolerance=settings.tolerance, confidence=settings.confidence,
                max_pairs=settings.max_pairs, look_pairs=tuple(settings.look_pairs))
            if ab_verdicts.against_threshold(verdict, hi, compile_threshold) == "fails":
                out["fails"].append(record(
                    r, "first call (trace and compile) slower", metric="ab_first_call",
                    interval=(ratio, lo, hi),
                    detail=_interval_text(ratio, lo, hi, len(first), compile_threshold)))
    for case_id in sorted(ids - seen):  # touched, and no A/B row: never a pass
        out["not_measured"].append(case_id)
        out["undecided"].append(case_id)
    jit = [c for c in sorted(ids) if is_jit(c)]
    pool = ab_verdicts.pooled(units, jit, tolerance=settings.tolerance,
                              confidence=settings.confidence, max_pairs=settings.max_pairs,
                              look_pairs=tuple(settings.look_pairs))
    if pool is not None:
        pool["against_threshold"] = ab_verdicts.against_threshold(
            pool["verdict"], pool["ci_high"], threshold)
        pool["text"] = (f"the change as a whole over the {len(pool['cases'])} touched JIT "
                        f"cases (geometric mean of B / A per pair): {pool['verdict']}, "
                        + _interval_text(pool["ratio"], pool["ci_low"], pool["ci_high"],
                                         pool["pairs"], threshold))
        if pool["against_threshold"] == "fails":
            out["fails"].append({"case_id": "(pooled: " + ", ".join(pool["cases"]) + ")",
                                 "metric": "ab_time_pooled", "ratio": pool["ratio"],
                                 "low": pool["ci_low"], "high": pool["ci_high"],
                                 "pairs": pool["pairs"], "reference": 1.0,
                                 "latest": pool["ratio"], "change": pool["ratio"] - 1,
                                 "noise": None, "q_value": None,
                                 "text": pool["text"] + "; what changed: " + changed})
    out["pooled"] = pool
    return out


def measure(plan: Plan, cases: Sequence[Case], night_dir: Path, threshold: float, *,
            process_profile: str, time_limit: float | None, case_timeout: float = 1800.0,
            on_progress: Callable | None = None, pairs: int | None = None,
            pairing: str = "auto", compile_threshold: float | None = None) -> dict[str, Any]:
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
    covered = _measured_ids(runs)
    missing = [c for c in again if c.case_id in ids and c.case_id not in covered]
    error = None
    if missing and load_night(night_dir).get("kind") != "merged":
        error = arm_a_moved(plan, sorted({c.framework for c in missing}))
    if missing and not error and load_night(night_dir).get("kind") != "merged":
        todo, _ = touched(again, [_Only({c.case_id for c in missing})])
        try:
            runs.append(ab_arms.run_ab(todo, night_dir / FOLDER, (plan.arm_a, plan.arm_b),
                                       chosen, case_timeout=case_timeout,
                                       on_progress=on_progress,
                                       command=["jitbench", "nightly", "(change night)"],
                                       watch=ids))
        except UserError as exc:  # an arm that cannot run (its interpreter lacks something)
            error = ("the side-by-side measurement could not run: "
                     + str(exc).replace("--a:", "the last good night's environment (arm A):")
                     .replace("--b:", "tonight's environment (arm B):"))
    if not runs:
        return {**facts, "undecided": sorted(ids), "not_measured": sorted(ids),
                "error": error}
    said = judge_runs(runs, plan, ids, threshold, compile_threshold, ref_ok)
    return {**facts, **said, "not_measurable": facts["not_measurable"] + said["not_measurable"],
            "slower": facts["slower"] + said["slower"], "error": error}


def reference_ok(plan: Plan) -> set[str] | None:
    """The cases the last good night measured ``ok`` (None where its folder is not known)."""
    from jitbench.results.files import read_rows

    if not plan.reference_dir or not (Path(plan.reference_dir) / "results.jsonl").is_file():
        return None
    return {r.get("case_id") for r in read_rows(Path(plan.reference_dir) / "results.jsonl")
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

    recorded_then = {_normal(k): v for k, v in plan.reference_distributions}
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
    return (f"arm A's interpreter is not what the last good night ({plan.reference}) measured: "
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
    folder = Path(night_dir) / FOLDER
    return sorted(d for d in folder.iterdir() if (d / "results.jsonl").is_file()
                  and (d / "meta.json").is_file() and load_meta(d).get("status") == "complete"
                  and "ab" in load_meta(d)) if folder.is_dir() else []


def judge_runs(runs: Sequence[Path], plan: Plan, ids: set[str], threshold: float,
               compile_threshold: float | None = None,
               reference: set[str] | None = None) -> dict[str, Any]:
    """:func:`judged` over the A/B runs of one night (several when its shards measured their
    own groups: their pairs judged together, at the confidence of every touched case of the
    night)."""
    import pandas as pd
    from jitbench.analysis.ab_verdicts import pair_units
    from jitbench.report.ab_page import table
    from jitbench.results.files import load_results
    from jitbench.run import ab_arms

    metas = [load_meta(d) for d in runs]
    rule = ab_arms.Settings(**{**(metas[0].get("ab") or {}).get("settings", {}),
                               "confidence": confidence(len(ids))})
    frames = [load_results(d) for d in runs]
    tables = [table(df, {**m, "ab": {**m["ab"], "settings": dataclasses.asdict(rule)}})
              for df, m in zip(frames, metas)]
    said = judged(pd.concat(tables, ignore_index=True), pd.concat(
        [pair_units(df) for df in frames], ignore_index=True), ids, plan, rule, threshold,
        compile_threshold, pd.concat([pair_units(df, "first_call_s") for df in frames],
                                     ignore_index=True), reference)
    abs_ = [m.get("ab") or {} for m in metas]
    return {"run": str(runs[0]), "runs": [str(d) for d in runs], "verdicts": said["verdicts"],
            "touched": sorted(ids), "slower": said["fails"], "smaller": said["smaller"],
            "undecided": said["undecided"], "pooled": said["pooled"],
            "not_measurable": said["not_measurable"], "not_measured": said["not_measured"],
            "bounds": said["bounds"], "ratios": said["ratios"], "lost": said["lost"],
            "rounds": max((a.get("rounds") or 0) for a in abs_),
            "elapsed_s": sum(float(m.get("elapsed_s") or 0) for m in metas),
            "confidence": rule.confidence, "tolerance": rule.tolerance,
            "max_pairs": rule.max_pairs, "min_pairs": rule.min_pairs,
            "pairing": rule.pairing}
