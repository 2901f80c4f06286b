"""``jitbench nightly --results DIR --status``: where a team's nightly stands, read from the
results folder alone (nothing measured, nothing written): the last good night, the nights after
it and why none of them is the reference (pending, killed, undecided, regressed, accepted), what
the next night will be compared with, whether a night holds the folder now, and the smallest
step the latest judged night could have seen per case, so that "nothing changed" reads
"nothing of more than x%"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jitbench.errors import UserError
from jitbench.nightly import state
from jitbench.results.files import load_meta, load_summary


def status(results_root: Path | str) -> dict[str, Any]:
    """The nightly's state under ``results_root`` as data."""
    from jitbench.nightly.runs import run_dirs

    root = Path(results_root)
    runs = run_dirs(root)
    if not runs:
        raise UserError(f"no nights under {str(root)!r} (run `jitbench nightly --results "
                        f"{root} ...` first)")
    ids = [load_meta(d).get("run_id") or d.name for d in runs]
    order = state.history_order(root)
    good, after = state.last_good(root, order, tonight="")
    nights = [{**state.state(d).facts(i), "started_at": load_meta(d).get("started_at")}
              for i, d in zip(ids, runs)]
    judged = next((n for n in reversed(nights) if n["state"] not in ("unfinished",
                                                                     "interrupted",
                                                                     "unjudged")), None)
    said = load_summary(root / judged["run_id"]) if judged else {}
    return {"results": str(root), "nights": nights, "last_good": good,
            "not_reference": after, "next_compared_with": good,
            "accepted": [n for n in nights if n["state"] == "accepted"],
            "latest_judged": judged["run_id"] if judged else None,
            "seen": said.get("seen") or [], "seen_note": said.get("seen_note"),
            "held_by": _holder(root)}


def _holder(root: Path) -> str | None:
    """Who holds the results folder now (``jitbench.nightly.lock``), or None."""
    from jitbench.nightly.lock import holder

    return holder(root)


def lines(said: dict[str, Any], last: int = 10) -> list[str]:
    """The status as lines for a terminal: the ``last`` nights, newest first."""
    out = [f"results: {said['results']}"]
    if said.get("held_by"):
        out.append(f"a night holds the folder now: {said['held_by']}")
    out.append(f"last good night: {said['last_good'] or 'none yet'}"
               + ("" if said["last_good"] else " (the next night is judged by the history "
                  "alone)"))
    out.append(f"the next night is compared with: {said['next_compared_with'] or 'its history'}")
    for n in said["not_reference"]:
        out.append(f"  not a reference: {n['run_id']} ({n['state']}): {n['why']}")
    out.append(f"nights (newest first, {min(last, len(said['nights']))} of "
               f"{len(said['nights'])}):")
    for n in list(reversed(said["nights"]))[:last]:
        out.append(f"  {n['run_id']:<28} {n['state']:<12} {n['why']}")
    if said.get("seen_note"):
        out.append(f"{said['latest_judged']}: {said['seen_note']}")
        for s in sorted(said["seen"], key=lambda s: -s["up_to"])[:last]:
            out.append(f"  {s['case_id']}: nothing of more than {100 * max(s['up_to'], 0):.1f}%"
                       f" ({s['how']})")
    return out
