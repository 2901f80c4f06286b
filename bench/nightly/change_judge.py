"""A change night's judgement: the A/B runs of the touched cases (``jitbench.nightly.change_ab``
measures them) read against the night's one threshold, case by case and pooled, beside what
each arm's statuses, compile counts and first calls say (:func:`judged`, :func:`judge_runs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.nightly.change import Plan
from jitbench.results.files import load_meta

# a touched case is called slower when its interval of time B / A lies above 1.00x at this
# confidence, shared out over the touched cases and the pooled verdict (Bonferroni): one alert
# a night at most 5%
FAMILY_CONFIDENCE = 0.95

def confidence(n_touched: int) -> float:
    """Each verdict's confidence: :data:`FAMILY_CONFIDENCE` shared out over the touched cases
    and the pooled verdict."""
    return 1.0 - (1.0 - FAMILY_CONFIDENCE) / max(1, n_touched + 1)


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
    (trace and compile) slower in B by at least that threshold (its interval's lower bound)
    fails it too; slower by less (the step ruled out), it is named in ``smaller``; slower with
    the step neither established nor ruled out, it is undecided (``first_open``). A case failing
    in both arms is not measurable here only when the last good night could not run it either
    (``reference_ok``: the cases it measured ``ok``); else the machine lost it since:
    undecided, never a pass. A case failing in A and ``ok`` in B was fixed: clear."""
    from jitbench.analysis import ab_verdicts

    changed = "; ".join(c.text() for c in plan.changes)
    out: dict[str, Any] = {"fails": [], "smaller": [], "undecided": [], "verdicts": {},
                           "first_open": [],
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
                         f"({plan.last_good}), measured side by side: {told}"
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
                    f"ok on the last good night ({plan.last_good}), failing in both "
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
            # a first call is one sample per process and scatters ~2x between processes on
            # a loaded host: a step of the threshold established fails the night, one ruled
            # out is named, and one neither established nor ruled out holds the night
            # (undecided, never a pass: the next night's pairs are added to these)
            if verdict == "slower":
                rec = record(r, "first call (trace and compile) slower", metric="ab_first_call",
                             interval=(ratio, lo, hi),
                             detail=_interval_text(ratio, lo, hi, len(first),
                                                   compile_threshold))
                if lo == lo and lo >= 1 + compile_threshold:
                    out["fails"].append(rec)
                elif hi == hi and hi < 1 + compile_threshold:
                    out["smaller"].append(rec)
                else:
                    out["first_open"].append(rec)
                    if r["case_id"] not in out["undecided"]:
                        out["undecided"].append(r["case_id"])
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


ROUND_OFFSET = 100_000  # an earlier night's rounds, numbered apart from tonight's


def judge_runs(runs: Sequence[Path], plan: Plan, ids: set[str], threshold: float,
               compile_threshold: float | None = None,
               reference: set[str] | None = None,
               earlier: Sequence[tuple[str, Sequence[Path]]] = ()) -> dict[str, Any]:
    """:func:`judged` over the A/B runs of one night (several when its shards measured their
    own groups: their pairs judged together, at the confidence of every touched case of the
    night), and ``earlier``: (night, its A/B runs) of earlier nights that measured the same two
    environments (``jitbench.nightly.change_ab.carried``), their pairs first. A pair is side
    by side whatever the night, so the pairs of several nights are one series per case; its
    looks are the nights' (9, 12, 20 pairs and each night's last), at the same error rate per
    look, so each night carried adds one look to an open case's error rate (at most
    ``MAX_CARRIED`` of them). A case decided by the nights before one keeps their pairs and
    verdict (``decided``: the touched cases decided)."""
    import pandas as pd
    from jitbench.analysis.ab_verdicts import pair_units
    from jitbench.report.ab_page import table
    from jitbench.results.files import load_results
    from jitbench.run import ab_arms

    groups = [list(ds) for _, ds in earlier] + [list(runs)]
    metas = [load_meta(d) for d in groups[-1]]  # tonight's: its elapsed time, its rounds
    settings = ((metas or [load_meta(d) for d in groups[-2]])[0].get("ab") or {}).get(
        "settings", {})
    first = load_meta(next(d for g in groups for d in g))
    frames: list[Any] = []
    decided: set[str] = set()
    said: dict[str, Any] = {}
    for i, group in enumerate(groups):
        for d in group:
            df = load_results(d)
            if "ab_round" in df:
                df["ab_round"] = pd.to_numeric(df["ab_round"], errors="coerce") \
                    + i * ROUND_OFFSET
            # a case an earlier night decided keeps that night's pairs and verdict: pairs a
            # later night measured for a group-mate do not reopen it
            frames.append(df[~df["case_id"].isin(decided)] if "case_id" in df else df)
        rule = ab_arms.Settings(**{**settings, "confidence": confidence(len(ids)),
                                   "max_pairs": int(settings.get("max_pairs") or 1) * (i + 1)})
        df = pd.concat(frames, ignore_index=True)
        said = judged(table(df, {**first, "ab": {**first["ab"],
                                                 "settings": dataclasses.asdict(rule)}}),
                      pair_units(df), ids, plan, rule, threshold, compile_threshold,
                      pair_units(df, "first_call_s"), reference)
        measured = set(df["case_id"]) if "case_id" in df else set()
        decided |= (measured & ids) - set(said["undecided"])
    rounds = [max((int((load_meta(d).get("ab") or {}).get("rounds") or 0) for d in g),
                  default=0) for g in groups]
    abs_ = [m.get("ab") or {} for m in metas]
    last = next((str(d) for g in groups[::-1] for d in g), None)
    return {"run": str(runs[0]) if runs else last, "runs": [str(d) for d in runs],
            "verdicts": said["verdicts"], "decided": sorted(decided),
            "touched": sorted(ids), "slower": said["fails"], "smaller": said["smaller"],
            "undecided": said["undecided"], "pooled": said["pooled"],
            "first_open": said["first_open"],
            "not_measurable": said["not_measurable"], "not_measured": said["not_measured"],
            "bounds": said["bounds"], "ratios": said["ratios"], "lost": said["lost"],
            "rounds": sum(rounds),
            "tonight_rounds": max([(a.get("rounds") or 0) for a in abs_], default=0),
            "carried": [{"night": night, "rounds": n, "runs": [str(d) for d in ds]}
                        for (night, ds), n in zip(earlier, rounds)],
            "elapsed_s": sum(float(m.get("elapsed_s") or 0) for m in metas),
            "confidence": rule.confidence, "tolerance": rule.tolerance,
            "max_pairs": rule.max_pairs, "min_pairs": rule.min_pairs,
            "pairing": rule.pairing}
