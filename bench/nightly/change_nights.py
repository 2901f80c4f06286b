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
from pathlib import Path
from typing import Any, Sequence

from jitbench.errors import UserError
from jitbench.results.files import load_meta, load_summary, read_rows

FORMAT = "jitbench-change-nights-1"
STEPS = (0.05, 0.10, 0.20)


def _night(night_dir: Path) -> dict[str, Any] | None:
    """One night's entry, or None when it measured no change side by side."""
    change = load_summary(night_dir).get("change") or {}
    if not change.get("run"):
        return None
    ab_dir = Path(change["run"])
    if not ab_dir.is_absolute() or not ab_dir.is_dir():
        ab_dir = night_dir / "change" / ab_dir.name
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


def _is_jit(case_id: str) -> bool:
    """Whether a case id names a JIT mode (its framework and mode words, as
    ``jitbench.define.workload.Case.case_id`` joins them)."""
    from jitbench.define.modes import MODES

    words = case_id.split("-")
    return any(MODES[(a, b)].jit for a, b in zip(words, words[1:]) if (a, b) in MODES)


def evaluate(corpus: dict[str, Any], threshold: float = 0.10) -> dict[str, Any]:
    """The replay's figures (module docstring): ``nights``, ``false_alerts`` (nights with
    an unchanged touched case called slower), ``false_alert_cases``, ``detection`` (per step
    size, the share of the JIT modes' planted cases found the same night, the history's
    series; ``detection_all``: of every touched case, JIT-off modes too), ``cost_ratio``
    (median over nights; ``cost_ratio_max``), ``pairs_used`` per step."""
    from jitbench.analysis.ab_verdicts import decide
    from jitbench.nightly import change

    nights = corpus["nights"]
    base = sorted(corpus.get("unchanged_night_s") or [])
    base_s = base[len(base) // 2] if base else None
    false_nights, false_cases, costs = 0, 0, []
    found = {s: [0, 0] for s in STEPS}
    found_jit = {s: [0, 0] for s in STEPS}  # the JIT modes' cases alone
    used = {s: [] for s in STEPS}
    for night in nights:
        pairs = night["pairs"]
        confidence = change.confidence(len(night["touched"]))
        recorded = max((len(p) for p in pairs.values()), default=0)
        # the rule's own looks and error rate per look; a night recorded with fewer pairs
        # than its most ends there (a case undecided by then counts as not found)
        max_pairs = change.MAX_PAIRS
        rule = dict(tolerance=change.TOLERANCE, confidence=confidence, max_pairs=max_pairs)
        slower, stop = 0, 0
        for case_id, p in pairs.items():
            units = _units(p)[:max_pairs]
            verdict, at = decide(units, **rule)
            slower += verdict == "slower"
            stop = max(stop, at or len(units))
            for s in STEPS:
                verdict, at = decide(_units(p, s)[:max_pairs], **rule)
                for tally in (found, found_jit) if _is_jit(case_id) else (found,):
                    tally[s][0] += verdict == "slower"
                    tally[s][1] += 1
                used[s].append(at or len(units))
        false_cases += slower
        false_nights += slower > 0
        night_s, ab_s, rounds = night.get("night_s"), night.get("ab_s"), night.get("rounds")
        if base_s:  # what a night costs when nothing changed, from the corpus's own nights
            night_s = base_s
        if night_s and ab_s and rounds:
            stop = max(stop, change.MIN_PAIRS) if recorded >= change.MIN_PAIRS else stop
            costs.append((night_s + ab_s / rounds * min(stop, rounds)) / night_s)
    costs.sort()
    return {"nights": len(nights), "false_alerts": false_nights,
            "false_alert_cases": false_cases,
            "touched_cases": sum(len(n["pairs"]) for n in nights),
            # the JIT modes' cases, as the history's series are (its --evaluate's detection)
            "detection": {f"{s:g}": (found_jit[s][0] / found_jit[s][1]
                                     if found_jit[s][1] else None) for s in STEPS},
            "detection_all": {f"{s:g}": (found[s][0] / found[s][1] if found[s][1] else None)
                              for s in STEPS},
            "pairs_used": {f"{s:g}": (sorted(used[s])[len(used[s]) // 2] if used[s] else None)
                           for s in STEPS},
            "cost_ratio": costs[len(costs) // 2] if costs else None,
            "unchanged_night_s": base_s,
            "cost_ratio_max": costs[-1] if costs else None,
            "threshold": threshold, "host": corpus.get("host"),
            "rule": {"max_pairs": change.MAX_PAIRS, "min_pairs": change.MIN_PAIRS,
                     "family_confidence": change.FAMILY_CONFIDENCE,
                     "tolerance": change.TOLERANCE}}


def table(result: dict[str, Any]) -> str:
    det = ", ".join(f"{float(k) * 100:g}%: {v * 100:.0f}% of the JIT cases, "
                    f"{result['detection_all'][k] * 100:.0f}% of all"
                    for k, v in result["detection"].items() if v is not None)
    return (f"{result['nights']} change nights ({result['touched_cases']} touched cases): "
            f"{result['false_alerts']} false alerts ({result['false_alert_cases']} cases); "
            f"steps found the same night: {det}; cost of a change night: "
            f"{result['cost_ratio']:.2f}x an unchanged one (median; at most "
            f"{result['cost_ratio_max']:.2f}x)" if result["cost_ratio"] else
            f"{result['nights']} change nights: {result['false_alerts']} false alerts; "
            f"steps found the same night: {det}")
