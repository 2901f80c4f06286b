"""Small steps cannot walk past the threshold one night at a time.

A change night names a case that is slower by less than the threshold (its interval rules the
threshold out) and passes, and that night becomes the reference: four 6% nights in a row are
26%, none of which fails on its own. So every night chains (multiplies) the A/B ratios of the
good nights since the last night a team accepted (or since the history's first), tonight's
included, for each case with a smaller step among them: slower, the same and faster nights
alike, so a step and a later recovery cancel. When a case's product reaches the threshold
the night fails, naming the nights that brought it. Accepting the night (``jitbench nightly
--accept``) starts the chain again.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from jitbench.results.files import load_acceptance, load_summary


def since_accepted(results_root: Path | str, judged: list[str]) -> list[str]:
    """The good nights before tonight (``judged[-1]``) since the last accepted one (that one
    left out: accepting it accepted the steps it brought), oldest first."""
    from jitbench.nightly.state import state

    out: list[str] = []
    for run_id in reversed(judged[:-1]):
        if load_acceptance(Path(results_root) / run_id):
            break
        if state(Path(results_root) / run_id).good:
            out.append(run_id)
    return out[::-1]


def _ratios(said: dict[str, Any]) -> dict[str, float]:
    """{case id: B / A} of every case a night's A/B measured (slower, the same or faster),
    or, for a summary written before it kept them, of its smaller steps."""
    found = (said.get("change") or {}).get("ratios")
    if isinstance(found, dict) and found:
        return {c: float(r) for c, r in found.items() if isinstance(r, (int, float)) and r > 0}
    return {r["case_id"]: float(r["ratio"]) for r in said.get("smaller_steps") or []
            if r.get("metric") == "ab_time" and isinstance(r.get("ratio"), (int, float))
            and r["ratio"] > 0}


def steps(results_root: Path | str, nights: list[str], tonight: str,
          tonight_said: dict[str, Any]) -> dict[str, list[tuple[str, float]]]:
    """{case id: [(night, ratio), ...]}: each A/B ratio of ``nights`` and tonight, for the
    cases with a smaller step among them (a faster or the same night in between counts too,
    so a step and its recovery cancel)."""
    chain: dict[str, list[tuple[str, float]]] = {}
    small: set[str] = set()
    said = [(n, load_summary(Path(results_root) / n)) for n in nights] + [
        (tonight, tonight_said)]
    for night, summary in said:
        small |= {r["case_id"] for r in summary.get("smaller_steps") or []
                  if r.get("metric") == "ab_time"}
        for case_id, ratio in _ratios(summary).items():
            chain.setdefault(case_id, []).append((night, ratio))
    return {c: seq for c, seq in chain.items() if c in small}


def judge(results_root: Path | str, h, threshold: float, verdict: dict[str, Any]
          ) -> dict[str, Any]:
    """What the chain adds to a night's ``verdict``: ``creep`` (each case with smaller steps
    since the last accepted night: the nights, their ratios and the product), and where a
    product reaches the threshold a confirmed regression (metric ``creep``) that fails the
    night (``confirmed``, ``regression``)."""
    tonight = h.order[-1]
    nights = since_accepted(results_root, list(h.judged))
    found = steps(results_root, nights, tonight, verdict)
    creep, fails = [], []
    for case_id, seq in sorted(found.items()):
        total = math.prod(r for _, r in seq)
        rec = {"case_id": case_id, "nights": [n for n, _ in seq],
               "ratios": [r for _, r in seq], "total": total,
               "fails": len(seq) > 1 and total >= 1 + threshold}
        creep.append(rec)
        if rec["fails"]:
            fails.append({
                "case_id": case_id, "metric": "creep", "ratio": total, "low": None,
                "high": None, "reference": 1.0, "latest": total, "change": total - 1,
                "noise": None, "q_value": None,
                "text": (f"smaller steps that add up past the {100 * threshold:.0f}% threshold "
                         f"since the last accepted night: " + ", ".join(
                             f"{n} {100 * (r - 1):+.1f}%" for n, r in seq)
                         + f" = {100 * (total - 1):+.1f}% in all (accept the night with a "
                           f"reason to start the sum again: jitbench nightly --accept "
                           f"{tonight} --reason TEXT)")})
    if not fails:
        return {"creep": creep}
    return {"creep": creep, "confirmed": list(verdict.get("confirmed") or []) + fails,
            "regression": True}
