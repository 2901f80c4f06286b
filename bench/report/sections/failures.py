"""Every row that did not pass, with its error class, phase and message (shown as text)."""

from __future__ import annotations

from typing import Any

from jitbench.report.facts import text_or
from jitbench.report.sections import Section, register


def _data(run, images) -> dict[str, Any]:
    df = run.df
    failures = []
    for r in df[df["status"] != "ok"].sort_values(["status", "case_id"]).to_dict("records"):
        failures.append({"case_id": r["case_id"], "status": r["status"],
                         "error_type": text_or(r.get("error_type"), ""),
                         "error": text_or(r.get("error"), ""),
                         "phase": text_or(r.get("error_phase"), ""),
                         "expected": text_or(r.get("expected_failure"), "")})
    return {"failures": failures,
            "n_failures": sum(f["status"] != "skipped" for f in failures),
            "n_skips": sum(f["status"] == "skipped" for f in failures)}


def _nav(d) -> list[tuple[str, str]]:
    skips = f" · skips ({d['n_skips']})" if d["n_skips"] else ""
    return [("failures", f"Failures ({d['n_failures']}){skips}")]


register(Section(name="failures", title="Failures and skips", order=40, data=_data, nav=_nav))
