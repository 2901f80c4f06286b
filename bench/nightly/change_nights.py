"""A corpus of change nights and its replay (``jitbench nightly --change-corpus FILE``,
``jitbench nightly --evaluate FILE``): how often a night's A/B of a change
(``jitbench.nightly.change``) calls an unchanged case slower, how often it finds a step the
same night, and what a change night costs.

A corpus night is a real change night whose change moved nothing (an inert change: e.g. the
test hook at ``x1``), recorded with a fixed number of process pairs (``--change-pairs N``) so
that the sequential rule can be replayed on them as far as it would have gone. Per night it
keeps the touched cases' pairs (median time per call of arm A and arm B, per round), the
night's own run time and the A/B's.

Replay, per night: *false alerts*: the rule (``jitbench.analysis.ab_verdicts.decide`` at the night's
per-case confidence, looks at 4, 6, 9, 12 pairs) on the pairs as recorded: a night with any
touched case ``slower`` is a false alert. *Detection* of a step s: arm B's times of one touched
case at a time multiplied by 1 + s, the rule replayed: found when that case is ``slower``;
``detection`` counts the JIT modes' cases (the series a history judges), ``detection_all``
every touched case.
*Cost*: (a night's run + the A/B's wall time per round × the rounds the rule used, the
largest over the touched cases, at least its fewest) / a night's run, a night's run being the
median wall time of the corpus's nights where nothing changed (``unchanged_night_s``; the
change night's own run where it has none).
"""

from __future__ import annotations

import math
import os
import platform
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from jitbench.errors import UserError
from jitbench.results.files import load_meta, load_summary, read_rows
from jitbench.results.run_folder import CHANGE

FORMAT = "jitbench-change-nights-1"
STEPS = (0.05, 0.10, 0.20)


def _night(night_dir: Path) -> dict[str, Any] | None:
    """One night's entry, or None when it measured no change side by side."""
    change = load_summary(night_dir).get("change") or {}
    if not change.get("run"):
        return None
    ab_dir = Path(change["run"])
    if not ab_dir.is_absolute() or not ab_dir.is_dir():
        ab_dir = night_dir / CHANGE / ab_dir.name
    ab_meta = load_meta(ab_dir)
    touched = set(change.get("touched") or [])
    pairs: dict[str, dict[int, dict[str, float]]] = {}
    for r in read_rows(ab_dir / "results.jsonl"):
        if r.get("case_id") not in touched or r.get("status") != "ok":
            continue
        t = r.get("median_s")
        if isinstance(t, (int, float)) and t > 0:
            pairs.setdefault(r["case_id"], {}).setdefault(int(r["ab_round"]), {})[
                r["ab_arm"]] = float(t)
    rounds = int((ab_meta.get("ab") or {}).get("rounds") or 0)
    return {"run_id": night_dir.name, "night_s": load_meta(night_dir).get("elapsed_s"),
            "ab_s": ab_meta.get("elapsed_s"), "rounds": rounds,
            "pairing": ((ab_meta.get("ab") or {}).get("settings") or {}).get(
                "pairing", "alternating"),
            "changes": change.get("changes") or [], "touched": sorted(touched),
            "pairs": {c: [[by.get(i, {}).get("a"), by.get(i, {}).get("b")]
                          for i in range(rounds)] for c, by in sorted(pairs.items())}}


def from_runs(night_dirs: Sequence[Path | str], command: str = "") -> dict[str, Any]:
    """The change nights among ``night_dirs`` (oldest first) as a corpus, with the wall time of
    the others (``unchanged_night_s``: what a night costs when nothing changed)."""
    nights, unchanged = [], []
    for d in night_dirs:
        night = _night(Path(d))
        if night:
            nights.append(night)
        elif isinstance(load_meta(Path(d)).get("elapsed_s"), (int, float)):
            unchanged.append(float(load_meta(Path(d))["elapsed_s"]))
    if not nights:
        raise UserError("none of these nights measured a change side by side (record change "
                        "nights with `jitbench nightly --change-pairs N` and a change)")
    return {"format": FORMAT, "command": command,
            "host": {"machine": platform.machine(), "node": platform.node(),
                     "cpus": os.cpu_count()}, "nights": nights,
            "unchanged_night_s": unchanged}


def is_corpus(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT \
        and isinstance(data.get("nights"), list)


def _units(pairs: list[list[float | None]], step: float = 0.0) -> list[float]:
    return [math.log(b * (1 + step) / a) for a, b in pairs
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0 and b > 0]


def evaluate(corpus: dict[str, Any], threshold: float = 0.10) -> dict[str, Any]:
    """The replay's figures (module docstring), each case judged against ``threshold`` as a
    night judges it (``jitbench.analysis.ab_verdicts.against_threshold``): ``nights``,
    ``false_alerts`` (nights an unchanged touched case, or the pooled verdict, would have
    failed), ``false_named`` (nights one was called slower at all), ``undecided`` (nights
    that would have exited undecided; ``undecided_jit``: for a JIT mode's case), and per step
    size planted into one case at a time: ``detection`` (the JIT modes' cases, the history's
    series, failing the night), ``named`` (called slower, failing or not),
    ``detection_all`` (every touched case, JIT-off modes too); ``pooled`` / ``pooled_named``:
    the step planted into every touched JIT case at once (a change that moves them all),
    the pooled verdict failing the night / calling it slower; ``cost_ratio`` (median over
    nights; ``cost_ratio_max``), ``pairs_used`` per step. A night recorded with fewer pairs
    than the rule may take ends there: a case still open counts as not found."""
    from jitbench.analysis.ab_verdicts import against_threshold, decide_interval
    from jitbench.nightly import change_ab

    nights = corpus["nights"]
    base = sorted(corpus.get("unchanged_night_s") or [])
    base_s = base[len(base) // 2] if base else None
    tally: dict[str, dict[float, list[int]]] = {
        k: {s: [0, 0] for s in STEPS}
        for k in ("detection", "named", "detection_all", "pooled", "pooled_named")}
    false_nights, false_named, false_cases, undecided, undecided_jit = 0, 0, 0, 0, 0
    costs: list[float] = []
    used: dict[float, list[int]] = {s: [] for s in STEPS}

    def count(key: str, step: float, hit: bool) -> None:
        tally[key][step][0] += hit
        tally[key][step][1] += 1

    for night in nights:
        pairs = night["pairs"]
        rule = dict(tolerance=change_ab.TOLERANCE,
                    confidence=change_ab.confidence(len(night["touched"])),
                    max_pairs=change_ab.MAX_PAIRS, look_pairs=change_ab.LOOK_PAIRS)
        recorded = max((len(p) for p in pairs.values()), default=0)
        fails, named, open_any, open_jit, stop = 0, 0, False, False, 0
        for case_id, p in pairs.items():
            verdict, at, _, _, hi = decide_interval(_units(p), **rule)
            said = against_threshold(verdict, hi, threshold)
            fails += said == "fails"
            named += verdict == "slower"
            open_any |= said == "undecided"
            open_jit |= said == "undecided" and change_ab.is_jit(case_id)
            stop = max(stop, at or len(_units(p)))
            for s in STEPS:
                verdict, at, _, _, hi = decide_interval(_units(p, s), **rule)
                said = against_threshold(verdict, hi, threshold)
                count("detection_all", s, said == "fails")
                if change_ab.is_jit(case_id):
                    count("detection", s, said == "fails")
                    count("named", s, verdict == "slower")
                used[s].append(at or len(_units(p)))
        jit = [c for c in pairs if change_ab.is_jit(c)]
        for s in (0.0, *STEPS):
            pool = _pooled({c: _units(pairs[c], s) for c in jit}, rule)
            if pool is None:
                continue
            said = against_threshold(pool[0], pool[1], threshold)
            if s == 0.0:
                fails += said == "fails"
                named += pool[0] == "slower"
            else:
                count("pooled", s, said == "fails")
                count("pooled_named", s, pool[0] == "slower")
        false_cases += fails
        false_nights += fails > 0
        false_named += named > 0
        undecided += open_any
        undecided_jit += open_jit
        night_s, ab_s, rounds = night.get("night_s"), night.get("ab_s"), night.get("rounds")
        if base_s:  # what a night costs when nothing changed, from the corpus's own nights
            night_s = base_s
        if night_s and ab_s and rounds:
            stop = max(stop, change_ab.MIN_PAIRS) if recorded >= change_ab.MIN_PAIRS else stop
            costs.append((night_s + ab_s / rounds * min(stop, rounds)) / night_s)
    costs.sort()

    def share(key: str) -> dict[str, float | None]:
        return {f"{s:g}": (a / n if n else None) for s, (a, n) in tally[key].items()}

    return {"nights": len(nights), "false_alerts": false_nights,
            "false_alert_cases": false_cases, "false_named": false_named,
            "undecided": undecided, "undecided_jit": undecided_jit,
            "touched_cases": sum(len(n["pairs"]) for n in nights),
            "recorded_pairs": max((len(p) for n in nights for p in n["pairs"].values()),
                                  default=0),
            # the JIT modes' cases, as the history's series are (its --evaluate's detection)
            "detection": share("detection"), "named": share("named"),
            "detection_all": share("detection_all"), "pooled": share("pooled"),
            "pooled_named": share("pooled_named"),
            "pairs_used": {f"{s:g}": (sorted(used[s])[len(used[s]) // 2] if used[s] else None)
                           for s in STEPS},
            "cost_ratio": costs[len(costs) // 2] if costs else None,
            "unchanged_night_s": base_s,
            "cost_ratio_max": costs[-1] if costs else None,
            "threshold": threshold, "host": corpus.get("host"),
            # how the corpus's pairs ran (jitbench.run.ab_arms.PAIRINGS): each night's, counted
            "pairing": dict(Counter(n.get("pairing", "alternating") for n in nights)),
            "rule": {"max_pairs": change_ab.MAX_PAIRS, "min_pairs": change_ab.MIN_PAIRS,
                     "look_pairs": list(change_ab.LOOK_PAIRS),
                     "family_confidence": change_ab.FAMILY_CONFIDENCE,
                     "tolerance": change_ab.TOLERANCE}}


def _pooled(units: dict[str, list[float]], rule: dict[str, Any]
            ) -> tuple[str | None, float] | None:
    """(verdict, high) of the pooled verdict over these cases' pairs, pair i of each case
    being round i (``jitbench.analysis.ab_verdicts.pooled``, as a night judges it)."""
    import pandas as pd
    from jitbench.analysis.ab_verdicts import pooled

    rows = pd.DataFrame([(c, i, x) for c, u in units.items() for i, x in enumerate(u)],
                        columns=["case_id", "ab_round", "log_ratio"])
    said = pooled(rows, list(units), **rule)
    return None if said is None else (said["verdict"], said["ci_high"])


def table(result: dict[str, Any]) -> str:
    det = ", ".join(f"{float(k) * 100:g}%: {v * 100:.0f}% of the JIT cases fail the night "
                    f"({result['named'][k] * 100:.0f}% named), "
                    f"{result['detection_all'][k] * 100:.0f}% of all"
                    for k, v in result["detection"].items() if v is not None)
    return (f"{result['nights']} change nights ({result['touched_cases']} touched cases): "
            f"{result['false_alerts']} false alerts ({result['false_alert_cases']} cases); "
            f"steps found the same night: {det}; cost of a change night: "
            f"{result['cost_ratio']:.2f}x an unchanged one (median; at most "
            f"{result['cost_ratio_max']:.2f}x)" if result["cost_ratio"] else
            f"{result['nights']} change nights: {result['false_alerts']} false alerts; "
            f"steps found the same night: {det}")
