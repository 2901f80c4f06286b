"""A night's state, which no fault can fake: whether a night may be the reference the next
night is measured against (the last good night), and if not, why.

A night is a sequence of phases, and each records when it finished (``night.json`` in its run
folder, ``jitbench.results.files.NIGHT_NAME``): ``run`` (its cases measured), ``ab`` (a change
night's side-by-side measurement), ``report``, ``judgement`` (its summary written); a night
split over machines has ``merge`` (every shard's rows in one folder) before its judgement.
The folder is made a night, with a summary that says its judgement is pending, *before*
anything is measured, so a kill at any phase (a CI time limit, SIGTERM, a lost machine) leaves
a night that says so. A night is good only when its judgement finished and confirmed no
regression and left nothing undecided, or when a team accepted it
(``jitbench nightly --accept``). A run folder no night judged (``jitbench run`` into the
results folder) is never the reference either.

:func:`last_good` is the one answer to "what is tonight compared with", for the judge
(``jitbench.nightly.change``) and for the recipe's two environments
(``jitbench.nightly.environments``) alike.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any, Sequence

from jitbench.results.files import (PENDING, load_acceptance, load_meta, load_night,
                                    load_summary, write_night, write_summary)

# the phases of a night, in the order they run (a sharded night: shards, merge, judgement)
PHASES = ("run", "ab", "report", "merge", "judgement")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def begin(run_dir: Path | str, *, kind: str = "night", **facts: Any) -> Path:
    """Make ``run_dir`` a night before anything runs in it: its record of phases (none
    finished) and a summary that says its judgement is pending. ``kind``: ``night`` or
    ``merged`` (a sharded night's merge); ``facts``: what else the record keeps (a merge's
    shards)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    old = load_night(run_dir)
    write_night(run_dir, {"run_id": run_dir.name, "kind": kind,
                          "created_at": old.get("created_at") or _now(),
                          "phases": {}, **facts})
    pending(run_dir)
    return run_dir


def pending(run_dir: Path | str) -> None:
    """The night is being judged: until its judgement is written it is no reference."""
    write_summary(run_dir, {"latest_run": Path(run_dir).name,
                            PENDING: "the night's judgement has not finished"})


def finished(run_dir: Path | str, phase: str) -> None:
    """Record that ``phase`` of the night in ``run_dir`` finished (a folder that is not yet a
    night, e.g. one measured by an older jitbench and judged now, becomes one)."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r} (one of {', '.join(PHASES)})")
    said = load_night(run_dir) or {"run_id": Path(run_dir).name, "kind": "night",
                                   "created_at": _now(), "phases": {}}
    said.setdefault("phases", {})[phase] = _now()
    write_night(run_dir, said)


@dataclasses.dataclass(frozen=True)
class State:
    """What a night is to the history: ``name`` (good, accepted, unfinished, interrupted,
    incomplete, unjudged, regressed, undecided) and why, in words."""

    name: str
    why: str

    @property
    def good(self) -> bool:
        return self.name in ("good", "accepted")

    def facts(self, run_id: str) -> dict[str, Any]:
        return {"run_id": run_id, "state": self.name, "why": self.why}


def state(run_dir: Path | str) -> State:
    """The state of the night in ``run_dir`` (module docstring)."""
    run_dir = Path(run_dir)
    accepted = load_acceptance(run_dir)
    if accepted:
        return State("accepted", f"accepted as the reference: {accepted['reason']}")
    night, said = load_night(run_dir), load_summary(run_dir)
    missing = night.get("missing_shards") or []
    if missing:
        return State("incomplete", f"shard(s) {', '.join(missing)} of {night.get('shards')} "
                                   f"never reached the merge: their cases were not measured")
    status = load_meta(run_dir).get("status") or "complete"
    if status != "complete":
        return State("interrupted", f"its run did not complete ({status})")
    phases = night.get("phases") or {}
    if night.get("kind") == "merged" and "merge" not in phases:
        return State("unfinished", "its merge never finished: its shards' rows may be "
                                   "missing")
    if said.get(PENDING) or (night and "judgement" not in phases):
        done = [p for p in PHASES if p in phases]
        return State("unfinished", "its judgement never finished (stopped "
                     + (f"after its {done[-1]} phase" if done else "during its run") + ")")
    if not said:
        return State("unjudged", "no night judged it (measured outside `jitbench nightly`)")
    if said.get("regression"):
        # a case once, whichever of its measures stepped (time, first call, compiles)
        steps = list(dict.fromkeys(r.get("case_id") for r in said.get("confirmed") or []))
        return State("regressed", "it confirmed a regression"
                     + (f" ({', '.join(map(str, steps[:3]))}"
                        + (f" and {len(steps) - 3} more" if len(steps) > 3 else "") + ")"
                        if steps else ""))
    if said.get("undecided"):
        return State("undecided", f"{len(said['undecided'])} case(s) left undecided")
    return State("good", "judged: no regression, nothing undecided")


def is_good(run_dir: Path | str) -> bool:
    """Whether a night can be the reference (:func:`state`)."""
    return state(run_dir).good


def last_good(results_root: Path | str, order: Sequence[str], tonight: str | None = None
              ) -> tuple[str | None, list[dict[str, Any]]]:
    """(the latest night of ``order`` before ``tonight`` that can be the reference, or None;
    the nights after it that could not be, newest first, each with its state and why).
    ``tonight`` None: ``order``'s last is tonight (the judge); pass ``""`` to consider every
    night of ``order`` (the recipe, before tonight's night exists)."""
    order = list(order)
    if tonight is None:
        order = order[:-1]
    elif tonight:
        order = order[:order.index(tonight)] if tonight in order else order
    skipped: list[dict[str, Any]] = []
    for run_id in reversed(order):
        said = state(Path(results_root) / run_id)
        if said.good:
            return run_id, skipped
        skipped.append(said.facts(run_id))
    return None, skipped


def history_order(results_root: Path | str) -> list[str]:
    """The run ids of the history under ``results_root`` measured the way its latest run was
    (``jitbench.nightly.runs.comparable``), oldest first: the nights a reference is chosen
    from."""
    from jitbench.nightly.runs import comparable, run_dirs

    metas = {load_meta(d).get("run_id") or d.name: load_meta(d) for d in run_dirs(results_root)}
    return comparable(metas, list(metas)) if metas else []


def unusable_note(skipped: Sequence[dict[str, Any]], good: str | None) -> str | None:
    """One sentence naming the nights that could not be the reference, and what is used."""
    if not skipped:
        return None
    names = "; ".join(f"{s['run_id']} ({s['state']}: {s['why']})" for s in skipped)
    return (f"not a reference: {names}; "
            + (f"measured against the last good night, {good}" if good else
               "no earlier night is good: judged by the history alone"))
