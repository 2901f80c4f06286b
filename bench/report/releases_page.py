"""A ladder of releases (``jitbench releases``) as one self-contained HTML page, read from its
``releases.json`` (``jitbench.releases.ladder``), so the page and the JSON say the same: the
releases (a failed one with its reason), a bisect's steps, and per case each measure across
releases with its interval, the step between each pair of neighbours marked where it moved.

Nothing from the record is marked safe (release names, case ids and error messages are
user data): the template escapes every value."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from jitbench.report import fmt

PROGRAM_ONLY = ["program"]  # a case's steps when its compiled program alone changed
MEASURES = (("time", "steady time", "secs"), ("jit_speedup", "JIT speedup", "times"),
            ("first_call", "first call", "secs"))
CSS = {"slower": "slower", "faster": "faster", "broke": "slower", "mended": "faster",
       "lower": "slower", "higher": "faster"}  # lower / higher: the JIT speedup's


def _value(kind: str, v: Mapping[str, Any] | None) -> dict[str, str]:
    v = v or {}
    show = fmt.secs if kind == "secs" else fmt.times
    iv = "" if v.get("ci_low") is None or v.get("ci_high") is None else \
        f"[{show(v['ci_low'])} – {show(v['ci_high'])}]"
    return {"value": show(v.get("value")), "interval": iv}


def _ids(values) -> str:
    return ", ".join(str(v) for v in values) if values else fmt.DASH


def _step_cell(measure: str, c: Mapping[str, Any]) -> dict[str, str]:
    v = c.get(measure) or {}
    verdict = v.get("verdict")
    word = verdict or ""
    moved = measure in (c.get("stepped") or [])
    ratio = f"{fmt.times(v.get('ratio'))} {fmt.interval(v.get('ci_low'), v.get('ci_high'))}"
    return {"text": ratio,
            "verdict": word, "css": CSS.get(verdict, "same") if moved else "same",
            "moved": moved}


def _fact_cell(name: str, c: Mapping[str, Any]) -> dict[str, str]:
    moved = name in (c.get("stepped") or [])
    text = {"compiles": lambda f: f"{_ids(f['before'])} → {_ids(f['after'])}",
            "program": lambda f: "changed" if f["changed"] else ("same" if f["before"] and
                                                                 f["after"] else fmt.DASH),
            "error": lambda f: f"{fmt.num(f['before'])} → {fmt.num(f['after'])}"}[name](c[name])
    return {"text": text, "css": "slower" if moved else "same", "moved": moved}


def step_counts(cases) -> dict[str, Any]:
    """A step's cases as the terminal says them (``jitbench.releases.step.counts``): those
    that stepped in anything but their compiled program alone (``moved``), those whose
    program alone changed (``program_only``: nothing measured moved), all (``cases``), and the
    sentence (``text``)."""
    program_only = sum(1 for c in cases if list(c.get("stepped") or []) == PROGRAM_ONLY)
    moved = sum(1 for c in cases if c.get("stepped")) - program_only
    text = f"{moved} of {len(cases)} cases stepped" + (
        f"; {program_only} more changed program only" if program_only else "")
    return {"moved": moved, "program_only": program_only, "cases": len(cases), "text": text}


def case_tables(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per case: a row per measured release (each measure's value with its interval over
    processes) and between neighbours a row for the step (each measured ratio with its
    interval and verdict, each fact's change), steps that moved marked; cases with a step
    first (``moved``: steps in more than the compiled program; ``program_only``: steps where
    only the program changed), then those whose program alone changed."""
    rungs = [r["name"] for r in record["rungs"] if r.get("measured")]
    steps = {(s["before"], s["after"]): {c["case_id"]: c for c in s["cases"]}
             for s in record["steps"]}
    out = []
    for case_id, per in record["cases"].items():
        rows, moved, program_only, about = [], 0, 0, None
        order = [r for r in rungs if r in per]
        for i, rung in enumerate(order):
            e = per[rung]
            about = about or e
            rows.append({"kind": "release", "name": rung, "status": e.get("status") or "",
                         "cells": [_value(kind, e.get(m)) for m, _, kind in MEASURES],
                         "compiles": _ids(e.get("compiles")),
                         "program": _ids([p[:12] for p in e.get("program") or []]),
                         "error": fmt.num(e.get("error"))})
            if i + 1 < len(order):
                c = steps.get((rung, order[i + 1]), {}).get(case_id)
                if c is None:  # neighbours here, not measured side by side (a bisect's gap)
                    continue
                only_program = list(c["stepped"]) == PROGRAM_ONLY
                moved += bool(c["stepped"]) and not only_program
                program_only += only_program
                rows.append({"kind": "step", "name": f"{rung} → {order[i + 1]}",
                             "stepped": c["stepped"],
                             "cells": [_step_cell(m, c) for m, _, _ in MEASURES],
                             "compiles": _fact_cell("compiles", c),
                             "program": _fact_cell("program", c),
                             "error": _fact_cell("error", c),
                             "status": c["status"]["change"] or "",
                             "why": c["status"]["error_after"] or c["status"]["error_before"]
                             or ""})
        case = _case_of(record, case_id)
        out.append({"case_id": case_id, "title": case, "rows": rows, "moved": moved,
                    "program_only": program_only})
    out.sort(key=lambda t: (-t["moved"], -t["program_only"], t["case_id"]))
    return out


def _case_of(record: Mapping[str, Any], case_id: str) -> str:
    for s in record["steps"]:
        for c in s["cases"]:
            if c["case_id"] == case_id:
                return (f"{c['workload']}/{c['variant']} {c['framework']} {c['mode']} "
                        f"{c['device']} {c['dtype']} {c['size']}")
    return case_id


def render(record: Mapping[str, Any], templates, links: Mapping[str, str] | None = None
           ) -> str:
    """The page (``templates``: ``jitbench.report.html``'s jinja environment; ``links``: a
    step's A/B page by its run folder, relative to this page)."""
    links = dict(links or {})
    steps = [{"before": s["before"], "after": s["after"], "rounds": s["rounds"],
              **step_counts(s["cases"]),
              "warnings": s.get("warnings") or [], "link": links.get(s["run_dir"])}
             for s in record["steps"]]
    return templates.get_template("releases.html.j2").render(
        r=record, steps=steps, cases=case_tables(record),
        measures=[label for _, label, _ in MEASURES],
        settings=record["settings"], bisect=record.get("bisect"))


def write_releases_page(record: Mapping[str, Any], out_dir: Path | str,
                        links: Mapping[str, str] | None = None) -> Path:
    """``out_dir/index.html``; its path."""
    from jitbench.report.html import template_environment

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    page.write_text(render(record, template_environment(), links), encoding="utf-8")
    return page
