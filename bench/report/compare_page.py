"""Render a ``jitbench.report.compare.Comparison``: terminal lines and a self-contained HTML
page."""

from __future__ import annotations

import math
from pathlib import Path

from jitbench.errors import UserError
from jitbench.report import figures, fmt

# flagged first, then what did not change, then what cannot be compared
VERDICT_ORDER = ["regression", "newly failing", "improvement", "fixed", "unchanged",
                 "failing in both", "skipped", "only in A", "only in B"]
FLAGGED = ("regression", "newly failing", "improvement", "fixed")


def _sorted(table):
    t = table.copy()
    t["_v"] = t["verdict"].map({v: i for i, v in enumerate(VERDICT_ORDER)}).fillna(99)
    t["_c"] = -t["change_pct"].abs().fillna(0)
    return t.sort_values(["_v", "_c", "workload", "variant", "dtype", "size", "framework",
                          "mode"]).drop(columns=["_v", "_c"])


def _case(r) -> str:
    return (f"{r['workload']}/{r['variant']} {r['dtype']} {r['size']} {r['framework']} "
            f"{r['mode']} {r['device']}")


def _change_ci(r) -> str:
    if any(isinstance(r[k], float) and math.isnan(r[k]) for k in ("ci_low", "ci_high")):
        return ""
    return f"[{100 * (r['ci_low'] - 1):+.1f}%, {100 * (r['ci_high'] - 1):+.1f}%]"


def rows_for_display(cmp) -> list[dict[str, str]]:
    out = []
    for r in _sorted(cmp.table).to_dict("records"):
        status = ""
        if r["verdict"] in ("newly failing", "fixed", "failing in both", "skipped"):
            status = f"{r['status_a']} → {r['status_b']}"
        out.append({"verdict": r["verdict"], "case": _case(r),
                    "a": fmt.secs(r["median_a_s"]), "b": fmt.secs(r["median_b_s"]),
                    "change": fmt.signed_pct(r["change_pct"]), "ci": _change_ci(r),
                    "status": status, "flagged": r["verdict"] in FLAGGED,
                    "css": {"regression": "slower", "newly failing": "slower",
                            "improvement": "faster", "fixed": "faster"}.get(r["verdict"],
                                                                            "same"),
                    "noise": f"{r['noise_a']} / {r['noise_b']}",
                    "error_b": r["error_b"] if isinstance(r["error_b"], str) and
                    r["verdict"] == "newly failing" else ""})
    return out


def pair_rows(cmp) -> list[dict[str, str]]:
    """Each JIT pair's speedup in A and B and its change, flagged ones first."""
    order = {"slower": 0, "faster": 1, "unresolved": 2, "same": 3}
    out = []
    recs = sorted(cmp.pairs.to_dict("records"),
                  key=lambda r: (order.get(r["verdict"], 9), -abs(math.log(r["change"]))))
    for r in recs:
        changed = {True: "changed", False: "same", None: "–"}[r["program_changed"]
                                                              if r["program_changed"] in
                                                              (True, False) else None]
        out.append({"verdict": r["verdict"], "case": f"{_case(r)} vs {r['baseline']}",
                    "a": fmt.times(r["speedup_a"]), "b": fmt.times(r["speedup_b"]),
                    "change": fmt.times(r["change"]),
                    "ci": fmt.interval(r["ci_low"], r["ci_high"]),
                    "compiles": f"{fmt.num(r['compiles_a'], '.0f')} → "
                                f"{fmt.num(r['compiles_b'], '.0f')}",
                    "program": changed,
                    "css": {"slower": "slower", "faster": "faster"}.get(r["verdict"], "same")})
    return out


def pairs_line(cmp) -> str:
    counts = cmp.pairs["verdict"].value_counts().to_dict() if len(cmp.pairs) else {}
    changed = int(cmp.pairs["program_changed"].eq(True).sum()) if len(cmp.pairs) else 0
    parts = [f"{counts[v]} {v}" for v in ("slower", "faster", "same", "unresolved")
             if counts.get(v)]
    return (f"{len(cmp.pairs)} JIT pairs: " + (", ".join(parts) or "none in both runs")
            + f"; {changed} compiled another program")


def summary_line(cmp) -> str:
    c = cmp.counts()
    parts = [f"{c[v]} {v}" for v in VERDICT_ORDER if c.get(v)]
    return (f"{len(cmp.table)} rows: " + ", ".join(parts) + f" (significant: 95% interval "
            f"excludes 0 and |change| > {100 * cmp.noise_floor:g}%)")


def compare_lines(cmp) -> list[str]:
    """The comparison as a fixed-width table, flagged rows first."""
    rows = rows_for_display(cmp)
    head = ("verdict", "case", "A median", "B median", "change", "95% CI of change")
    cells = [(r["verdict"], r["case"], r["a"], r["b"], r["change"],
              r["ci"] or r["status"]) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
              for i, h in enumerate(head)]

    def line(c):
        return "  ".join(x.ljust(w) if i in (0, 1, 5) else x.rjust(w)
                         for i, (x, w) in enumerate(zip(c, widths))).rstrip()

    out = [f"A = {cmp.label_a}", f"B = {cmp.label_b}",
           "JIT speedups, B against A (each measured interleaved in its own run: the drift "
           "between the runs cancels)"]
    prow = pair_rows(cmp)
    phead = ("verdict", "JIT pair", "A", "B", "B/A", "95% CI", "compiles", "program")
    pcells = [(r["verdict"], r["case"], r["a"], r["b"], r["change"], r["ci"], r["compiles"],
               r["program"]) for r in prow]
    pw = [max(len(h), *(len(c[i]) for c in pcells)) if pcells else len(h)
          for i, h in enumerate(phead)]
    out += ["  ".join(x.ljust(w) for x, w in zip(c, pw)).rstrip()
            for c in [phead, tuple("-" * w for w in pw), *pcells]]
    out.append(pairs_line(cmp))
    out += ["", "Absolute times per call (they carry the machine's drift between the runs)",
            line(head), line(tuple("-" * w for w in widths))]
    out += [line(c) for c in cells]
    out.append(summary_line(cmp))
    ab = ab_line(cmp)
    if ab:
        out += ["", ab]
    return out


def ab_line(cmp) -> str | None:
    """When the two runs ran in different environments (framework versions, XLA/TF
    variables): the ``jitbench ab`` command that compares them side by side, precisely."""
    from jitbench.analysis.ab_verdicts import ab_command, filters_of

    found = ab_command(cmp.meta_a, cmp.meta_b, filters_of(cmp.meta_b.get("command")))
    if not found:
        return None
    return ("The runs ran in different environments; to tell that from the machine, measure "
            f"both side by side: {found['ab_command']}"
            + (f" ({found['ab_note']})" if found["ab_note"] else ""))


def write_compare_page(cmp, out_dir: Path | str) -> Path:
    from jitbench.report.html import template_environment

    out_dir = Path(out_dir)
    html = template_environment().get_template("compare.html.j2").render(
        label_a=cmp.label_a, label_b=cmp.label_b, rows=rows_for_display(cmp),
        pairs=pair_rows(cmp), pairs_summary=pairs_line(cmp), ab=ab_line(cmp),
        summary=summary_line(cmp), counts=cmp.counts(),
        chart=figures.compare_chart(cmp.table),
        noise_floor_pct=f"{100 * cmp.noise_floor:g}",
        metas=[(cmp.label_a, cmp.meta_a), (cmp.label_b, cmp.meta_b)])
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        page = out_dir / "index.html"
        page.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write the comparison to {str(out_dir)!r}: "
                        f"{exc.strerror}") from exc
    return page
