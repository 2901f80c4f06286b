"""A ladder's record, ``releases.json``: written when the ladder begins, after every A/B it
makes or reuses, and at its end (:func:`write`), so a ladder that is killed leaves a readable
file naming the A/B runs it has (``status``: ``running``, then ``complete``, ``interrupted``
or ``failed``; a ladder killed outright stays ``running``); read back by :func:`load`, said as
terminal lines by :func:`lines`. The page (``jitbench.report.releases_page``) reads the same
file, so both say the same.

What a ladder folder may hold when a ladder starts in it, and what continuing one reuses, is
``jitbench.releases.resume``'s.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from jitbench.errors import UserError
from jitbench.releases.step import MEASURES, clean, counts_text, per_release
from jitbench.results.files import write_json

SCHEMA_VERSION = 1  # releases.json: 1, the first (status, planned and the reuse added since)
FILE = "releases.json"
STATUSES = ("running", "complete", "interrupted", "failed")


def write(ladder: Any, rungs: Sequence[Any], neighbours: Sequence[tuple[str, str]], *,
          kind: str, package: str | None, bisect: Mapping[str, Any] | None = None,
          status: str = "complete", planned: Sequence[tuple[str, str]] | None = None
          ) -> dict[str, Any]:
    """The ladder's record (``ladder``: a ``jitbench.releases.ladder.Ladder``): its
    ``status`` (:data:`STATUSES`), its rungs (a failed one with its reason; a bisect's
    candidate it never reached, unbuilt), its steps (the A/B runs between ``neighbours`` made
    so far, in release order; for a bisect, the comparisons where it stopped halving), every
    A/B made (``comparisons``: measured, resumed or reused), the ladder's ``planned`` steps
    (a ladder's neighbours; None for a bisect), per case and rung each measure, what it cost
    over every session; written to ``releases.json`` whole or not at all."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r}: not one of {', '.join(STATUSES)}")
    s = ladder.settings
    pairs = set(neighbours)
    place = {r.name: i for i, r in enumerate(rungs)}
    steps = sorted((r for r in ladder.runs if (r["before"], r["after"]) in pairs),
                   key=lambda r: place.get(r["before"], 0))
    measured = {n for r in ladder.runs for n in (r["before"], r["after"])}
    built = [r for r in rungs if getattr(r, "built", True)]
    record = {
        "schema_version": SCHEMA_VERSION, "kind": kind, "package": package,
        "status": status,
        "ladder_id": ladder.folder.name, "folder": str(ladder.folder),
        "command": ladder.command,
        "settings": {"threshold": s.threshold, "tolerance": s.ab.tolerance,
                     "confidence": s.ab.confidence, "max_pairs": s.ab.max_pairs,
                     "time_limit": s.ab.time_limit, "budget": s.ab.budget},
        "rungs": [{"name": r.name, "spec": r.spec, "error": r.error,
                   "measured": r.name in measured, **dict(r.facts)} if r in built else
                  {"name": r.name, "spec": None, "error": None, "measured": False,
                   "requirement": getattr(r, "requirement", None),
                   "note": "not built: the bisect did not need it"} for r in rungs],
        "failed": [{"name": r.name, "error": r.error} for r in built if r.error],
        "planned": None if planned is None else [list(p) for p in planned],
        "steps": steps,
        "comparisons": [{k: r.get(k) for k in ("before", "after", "run_dir", "rounds",
                                               "status", "how")} for r in ladder.runs],
        "cases": per_release(ladder.runs, s.ab.confidence),
        "cost": {"environments": len(measured),
                 "environments_reused": sum(1 for r in built if r.facts.get("reused")
                                            and r.name in measured),
                 "comparisons": len(ladder.runs),
                 "comparisons_reused": sum(1 for r in ladder.runs if r.get("how") == "reused"),
                 "pairs": sum(r["rounds"] for r in ladder.runs),
                 "sessions": ladder.sessions,
                 "wall_s": round(ladder.earlier_s + time.monotonic() - ladder.began, 1)},
        **({"bisect": dict(bisect)} if bisect is not None else {}),
    }
    record = clean(record)
    path = ladder.folder / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    write_json(tmp, record)  # the results package writes every JSON file
    os.replace(tmp, path)  # never a half-written releases.json
    return record


def load(folder: Path | str) -> dict[str, Any]:
    """A ladder's ``releases.json``; UserError when the folder holds none, a damaged one or a
    newer one."""
    path = Path(folder) / FILE
    if not path.is_file():
        raise UserError(f"{str(folder)!r} holds no {FILE} (a folder `jitbench releases` "
                        f"wrote)")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{path} is damaged ({exc})") from None
    if not isinstance(record, dict):
        raise UserError(f"{path} is not a ladder's record (not a JSON object)")
    if record.get("schema_version", 0) > SCHEMA_VERSION:
        raise UserError(f"{path} was written by a newer jitbench (schema "
                        f"{record.get('schema_version')}); upgrade jitbench to read it")
    return record


def lines(record: Mapping[str, Any]) -> list[str]:
    """Terminal lines: the failed rungs, each step's cases that stepped (measure, ratio,
    interval; a case whose compiled program alone changed counted apart), a bisect's steps,
    the cost."""
    out = [f"not measured: {f['name']}: {f['error']}" for f in record["failed"]]
    for step in record["steps"]:
        moved = [c for c in step["cases"] if c["stepped"]]
        out.append(f"{step['before']} -> {step['after']}: {counts_text(step['cases'])} "
                   f"({step['rounds']} pairs)")
        for c in moved:
            out.append(f"  {_case_text(c)}: " + "; ".join(_measure_text(c, m)
                                                          for m in c["stepped"]))
    if "bisect" in record:
        b = record["bisect"]
        out.append(f"bisect {b['good']} .. {b['bad']}: {len(b['steps'])} step(s)")
        for s in b["steps"]:
            out.append(f"  {s['kind']} {s['before']} -> {s['after']}: {s['case_id']} "
                       f"{s['verdict']} {_ratio(s['ratio'], s['ci_low'], s['ci_high'])}")
    cost = record["cost"]
    reused = cost.get("comparisons_reused") or 0
    out.append(f"cost: {cost['environments']} environments ({cost['environments_reused']} "
               f"reused), {cost['comparisons']} A/B runs"
               + (f" ({reused} reused from an earlier session)" if reused else "")
               + f", {cost['pairs']} pairs of fresh processes, {cost['wall_s']:.0f} s")
    return out


def _case_text(c: Mapping[str, Any]) -> str:
    return f"{c['workload']}/{c['variant']} {c['framework']} {c['mode']} {c['dtype']} {c['size']}"


def _ratio(ratio, lo, hi) -> str:
    if ratio is None:
        return "—"
    return f"{ratio:.3f}x" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None
                              else "")


def _measure_text(c: Mapping[str, Any], m: str) -> str:
    if m in MEASURES:
        v = c[m]
        return f"{m} {v['verdict']} {_ratio(v['ratio'], v['ci_low'], v['ci_high'])}"
    if m == "status":
        return f"{c['status']['change']} ({c['status']['error_after'] or c['status']['after']})"
    return f"{m} changed ({c[m]['before']} -> {c[m]['after']})"
