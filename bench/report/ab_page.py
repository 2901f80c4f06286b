"""An A/B run (``jitbench ab``) as terminal lines and a self-contained HTML page: the arms side
by side, what they differ in beyond what was asked, a table of cases with time B / A, its
interval and verdict (``jitbench.analysis.ab_verdicts``), the programs that changed, and the command
that repeats it."""

from __future__ import annotations

import math
import shlex
from typing import Any, Mapping

from jitbench.analysis import ab_verdicts
from jitbench.report import fmt

ORDER = {"slower": 0, "faster": 1, "failed": 2, "unresolved": 3, "open": 4, "same": 5,
         "skipped": 6}
CSS = {"slower": "slower", "faster": "faster", "failed": "slower"}


def table(df, meta: Mapping[str, Any]):
    """The verdict of every case of the A/B run ``df`` / ``meta`` (final)."""
    s = meta["ab"]["settings"]
    return ab_verdicts.verdicts(df, tolerance=s["tolerance"], confidence=s["confidence"],
                                max_pairs=s["max_pairs"], final=True,
                                look_pairs=tuple(s.get("look_pairs") or ab_verdicts.LOOK_PAIRS))


def _case(r) -> str:
    return (f"{r['workload']}/{r['variant']} {r['framework']} {r['mode']} {r['device']} "
            f"{r['dtype']} {r['size']}")


def _ratio(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}×"


def _interval(lo, hi) -> str:
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (lo, hi)):
        return ""
    return f"[{lo:.3f}, {hi:.3f}]"


def _list(v) -> str:
    return ",".join(str(x) for x in v) if isinstance(v, (list, tuple)) and v else "—"


def records(t) -> list[dict[str, Any]]:
    """The table's rows for display, the flagged verdicts first, biggest change first."""
    recs = t.to_dict("records")
    recs.sort(key=lambda r: (ORDER.get(r["verdict"], 9),
                             -abs(r["change_pct"]) if r["change_pct"] == r["change_pct"] else 0,
                             _case(r)))
    out = []
    for r in recs:
        compiles = (_list(r["compiles_a"]) if r["compiles_a"] == r["compiles_b"]
                    else f"{_list(r['compiles_a'])} → {_list(r['compiles_b'])}")
        out.append({"verdict": r["verdict"], "css": CSS.get(r["verdict"], "same"),
                    "case": _case(r), "case_id": r["case_id"], "pairs": r["pairs"],
                    "a": fmt.secs(r["median_a_s"]), "b": fmt.secs(r["median_b_s"]),
                    "ratio": _ratio(r["ratio"]), "ci": _interval(r["ci_low"], r["ci_high"]),
                    "decided_at": "" if r["decided_at"] is None or r["decided_at"] != r[
                        "decided_at"] else int(r["decided_at"]),
                    "first_a": fmt.secs(r["first_call_a_s"]),
                    "first_b": fmt.secs(r["first_call_b_s"]),
                    "compiles": compiles, "program": r["program"] or "",
                    "err": f"{fmt.num(r['norm_rel_err_a'])} / {fmt.num(r['norm_rel_err_b'])}",
                    "memory": f"{fmt.num(r['compiled_memory_a_bytes'], '.3g')} / "
                              f"{fmt.num(r['compiled_memory_b_bytes'], '.3g')}",
                    "status": "" if r["status_a"] == r["status_b"] and r["status_a"].startswith(
                        "ok") and "," not in r["status_a"]
                    else f"A: {r['status_a'] or '—'}; B: {r['status_b'] or '—'}",
                    "error": r["error_b"] or r["error_a"] or ""})
    return out


def overview(t, meta: Mapping[str, Any]) -> dict[str, Any]:
    """What ``--json`` prints and the page's head says: arms, warnings, counts, cases."""
    ab = meta["ab"]
    cases = []
    for r in t.to_dict("records"):
        cases.append({k: (None if isinstance(v, float) and math.isnan(v) else v)
                      for k, v in r.items()})
    return {"run_id": meta.get("run_id"), "status": meta.get("status"),
            "rounds": ab.get("rounds"), "settings": ab["settings"], "arms": ab["arms"],
            "warnings": ab.get("warnings", []), "counts": ab_verdicts.counts(t),
            "command": shlex.join(meta.get("command") or []), "cases": cases}


def lines(t, meta: Mapping[str, Any]) -> list[str]:
    """Terminal lines: one per case with a verdict other than same, then the counts."""
    s = overview(t, meta)
    out = [f"A: {_arm_text(s['arms']['a'])}", f"B: {_arm_text(s['arms']['b'])}"]
    out += [f"warning: the arms also differ: {w}" for w in s["warnings"]]
    for r in records(t):
        if r["verdict"] != "same":
            out.append(f"{r['verdict']:<10} B/A {r['ratio']:>8} {r['ci']:<18} "
                       f"{r['pairs']:>2} pairs  {r['case']}")
    counts = ", ".join(f"{n} {v}" for v, n in sorted(s["counts"].items(),
                                                      key=lambda kv: ORDER.get(kv[0], 9)))
    out.append(f"{len(t)} cases, {s['rounds']} rounds of fresh processes per arm: {counts}")
    return out


def _arm_text(arm: Mapping[str, Any]) -> str:
    env = " ".join(f"{k}={v}" for k, v in (arm.get("env") or {}).items())
    return f"{arm.get('python')} (Python {arm.get('python_version')})" + (f", {env}" if env
                                                                          else "")


def render_ab(df, meta: Mapping[str, Any], templates) -> str:
    """The page of an A/B run (``templates``: ``jitbench.report.html``'s jinja environment;
    ``jitbench.report.html.write_report`` writes it)."""
    t = table(df, meta)
    s = overview(t, meta)
    arms = s["arms"]
    packages = sorted(set(arms["a"].get("packages") or {}) | set(arms["b"].get("packages")
                                                                     or {}))
    return templates.get_template("ab.html.j2").render(
        meta=meta, s=s, rows=records(t), arm_a=_arm_text(arms["a"]), arm_b=_arm_text(arms["b"]),
        packages=[{"name": p, "a": (arms["a"].get("packages") or {}).get(p, "—"),
                   "b": (arms["b"].get("packages") or {}).get(p, "—")} for p in packages],
        tolerance=100 * s["settings"]["tolerance"],
        confidence=100 * s["settings"]["confidence"])
