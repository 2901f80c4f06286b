"""Render a run (or a pytest-benchmark JSON) into reports/<run_id>/index.html."""

from __future__ import annotations

import json
import math
from pathlib import Path

from .. import analysis
from ..errors import UserError
from ..results import load_meta, load_results
from . import figures


def _fmt_s(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v * 1e9:.3g} ns"


def _fmt_num(v, spec=".3g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return format(v, spec)


def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bench.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined)
    env.filters["secs"] = _fmt_s
    env.filters["num"] = _fmt_num
    return env


def build_context(df, meta) -> dict:
    sp = analysis.speedups(df)
    workloads = []
    for name, g in df.groupby("workload", sort=True):
        rows = g.sort_values(["variant", "dtype", "size", "framework", "device", "mode"])
        wsp = sp[sp["workload"] == name]
        workloads.append({
            "name": name,
            "rows": rows.to_dict("records"),
            "speedups": wsp.sort_values(["variant", "dtype", "size", "framework",
                                         "mode", "baseline"]).to_dict("records"),
            "chart": figures.speedup_chart(wsp, f"{name}: JIT speedup"),
        })
    failures = df[~df["status"].isin(["ok"])].to_dict("records")
    return {"meta": meta, "meta_json": json.dumps(meta, indent=2, default=str),
            "workloads": workloads, "failures": failures, "n_rows": len(df),
            "status_counts": df["status"].value_counts().to_dict()}


def write_report(source: Path | str, out_dir: Path | str) -> Path:
    """Write index.html for a run folder (or results file); return its path."""
    source, out_dir = Path(source), Path(out_dir)
    df = load_results(source)
    if df.empty:
        raise UserError(f"{str(source)!r} holds no result rows")
    meta = load_meta(source) if source.is_dir() else {"run_id": source.stem}
    html = _env().get_template("report.html.j2").render(**build_context(df, meta))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        page = out_dir / "index.html"
        page.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write the report to {str(out_dir)!r}: {exc.strerror}") from exc
    return page
