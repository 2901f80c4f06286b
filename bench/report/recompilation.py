"""The Recompilation block: what each mode compiled per new signature of a sweep, whether a
revisit was free, and why it compiled (``jitbench.analysis.recompilation`` gives the data).

:func:`block` is the HTML of the block (the run report's section and the page of
``jitbench sweep`` both show it); :func:`write_page` writes the page of a sweep run.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Mapping, Sequence

from jitbench.analysis.recompilation import per_mode, verdict

_CSS = ("body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px}"
        "table{border-collapse:collapse;font-size:.9rem}td,th{padding:.2rem .6rem;"
        "border-bottom:1px solid #ddd;text-align:left;vertical-align:top}"
        ".num{text-align:right;font-variant-numeric:tabular-nums}.small{font-size:.8rem;"
        "color:#555}")


def _ms(v) -> str:
    return "–" if v is None else f"{1e3 * v:.1f} ms"


def block(rows: Sequence[Mapping[str, Any]]) -> str:
    """The section's HTML ('' when there are no sweep rows)."""
    if not rows:
        return ""
    e = html.escape
    out = ['<section id="recompilation"><h2>Recompilation</h2>',
           '<p class="small">Each mode builds the function once and calls it with each '
           'signature of the sweep in turn, then with each again. Compiles: the framework\'s '
           'own compile events (JAX) or XLA\'s log (TF); traces: jaxpr traces (JAX), '
           '<code>experimental_get_tracing_count()</code> (TF). "new signature": median wall '
           'time of a new signature after the first call.</p>',
           '<table><tr><th>sweep</th><th>mode</th><th>compiles per new signature</th>'
           '<th>traces per new signature</th><th class="num">new signature</th>'
           '<th class="num">compile</th><th class="num">revisit</th><th>verdict</th>'
           '<th>why (first reasons given)</th></tr>']
    for s in per_mode(rows):
        out.append(
            f"<tr><td>{e(s['workload'])}/{e(s['sweep'])}</td>"
            f"<td>{e(s['framework'])} {e(s['mode'])}</td>"
            f"<td>{e(', '.join(map(str, s['compiles_new'])))}</td>"
            f"<td>{e(', '.join(map(str, s['traces_new'])))}</td>"
            f"<td class=num>{_ms(s['new_s'])}</td><td class=num>{_ms(s['compile_s_new'])}</td>"
            f"<td class=num>{_ms(s['revisit_s'])}</td><td>{e(verdict(s))}</td>"
            f"<td class=small>{'<br>'.join(e(r) for r in s['reasons'])}</td></tr>")
    out.append("</table></section>")
    return "\n".join(out)


def write_page(run_dir: Path, out_dir: Path) -> Path:
    """``out_dir/index.html``: the Recompilation block of the sweep in ``run_dir``."""
    from jitbench.run.sweep import load

    rows = load(run_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "index.html"
    page.write_text(f"<!doctype html><meta charset=utf-8><title>jitbench sweep "
                    f"{html.escape(run_dir.name)}</title><style>{_CSS}</style>"
                    f"<h1>Recompile sweep {html.escape(run_dir.name)}</h1>{block(rows)}",
                    encoding="utf-8")
    return page
