"""A night's summary as Markdown (``nightly-summary.md`` beside the JSON one): the verdict, what
changed, the steps that fail the night and the smaller ones, what could not be measured, the
smallest step the night could see, and a link to the history page. A CI appends it to its
run's page (GitHub Actions: ``cat REPORTS/nightly-summary.md >> "$GITHUB_STEP_SUMMARY"``).

Data in, lines out: every value that comes from a run (case ids, error messages, package
names) is escaped so that it cannot break the table or the page around it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_SPECIAL = str.maketrans({"|": "\\|", "\n": " ", "\r": " ", "`": "'", "<": "&lt;",
                          ">": "&gt;", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
                          "#": "\\#"})


def escape(value: Any) -> str:
    """One table cell or inline text: no character of it starts Markdown or HTML."""
    return " ".join(str(value).splitlines()).translate(_SPECIAL)


def _pct(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(f) or math.isinf(f) else f"{100 * f:+.1f}%"


def verdict(said: Mapping[str, Any]) -> str:
    """The night's verdict in a few words (what its exit code says)."""
    if said.get("regression"):
        return "REGRESSION"
    if said.get("undecided"):
        return "UNDECIDED (not a pass)"
    return "no regression"


def _table(recs: list[Mapping[str, Any]]) -> list[str]:
    out = ["| case | measure | change | what |", "|---|---|---|---|"]
    for r in recs:
        out.append(f"| {escape(r.get('case_id'))} | {escape(r.get('metric'))} | "
                   f"{_pct(r.get('change'))} | {escape(r.get('text') or '')} |")
    return out


def markdown(said: Mapping[str, Any], report: str | None = None) -> str:
    """The Markdown of a night's summary ``said`` (``jitbench.nightly.night``'s record);
    ``report``: the history page's address, linked."""
    lines = [f"## jitbench nightly: {escape(said.get('latest_run') or '?')}: "
             f"{verdict(said)}", ""]
    for key in ("change_note", "unusable_note", "accepted_note", "machine_note",
                "waiting_note", "undecided_note", "seen_note"):
        if said.get(key):
            lines += [f"- {escape(said[key])}"]
    last = said.get("last_good") or {}
    if last.get("run"):
        lines += [f"- the next night is compared with: {escape(last['run'])}"]
    lines.append("")
    if said.get("confirmed"):
        lines += ["### Steps that fail the night", "", *_table(said["confirmed"]), ""]
    if said.get("smaller_steps"):
        lines += ["### Smaller steps (named, not failing; summed since the last accepted "
                  "night)", "", *_table(said["smaller_steps"]), ""]
    creeping = [c for c in said.get("creep") or [] if len(c.get("nights") or []) > 1]
    if creeping:
        lines += ["### Small steps since the last accepted night", "",
                  "| case | nights | in all |", "|---|---|---|"]
        lines += [f"| {escape(c['case_id'])} | "
                  f"{escape(', '.join(map(str, c.get('nights') or [])))} | "
                  f"{_pct((c.get('total') or 1) - 1)} |" for c in creeping]
        lines.append("")
    if said.get("not_measurable"):
        lines += ["### Not measurable here (they do not hold the night)", "",
                  "| case | why |", "|---|---|"]
        lines += [f"| {escape(r.get('case_id'))} | {escape(r.get('why'))} |"
                  for r in said["not_measurable"]]
        lines.append("")
    if report:
        lines += [f"[The history page]({report.replace(' ', '%20').replace(')', '%29')})", ""]
    return "\n".join(lines)
