"""reports/index.html: the runs, per-series trends over runs, and the latest regressions."""

from __future__ import annotations

import os
from pathlib import Path

from ..history import trend
from ..results import load_meta
from . import figures


def trend_charts(df, order) -> list[dict]:
    """One chart per workload: median time per call over runs, one line per series."""
    plt = figures.pyplot()
    charts = []
    wide = trend(df, order)
    if wide.empty:
        return charts
    by_workload: dict[str, list[str]] = {}
    for series in wide.columns:
        by_workload.setdefault(series.split("/")[0], []).append(series)
    for workload, cols in sorted(by_workload.items()):
        fig, ax = plt.subplots(figsize=(10, 4.5))
        for col in cols:
            ax.plot(range(len(wide)), wide[col], marker="o", linewidth=1,
                    label=col.split("/", 1)[1])
        ax.set_yscale("log")
        ax.set_xticks(range(len(wide)))
        ax.set_xticklabels(list(wide.index), rotation=30, ha="right", fontsize=7)
        ax.set_xlabel("run (oldest → newest)")
        ax.set_ylabel("median time per call [s] (log)")
        ax.set_title(f"{workload}: steady-state time over runs")
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
        charts.append({"workload": workload, "img": figures.to_data_uri(fig),
                       "n_series": len(cols), "n_points": int(wide[cols].notna().sum().max())})
    return charts


def write_history_page(df, order, results_root: Path, reports_root: Path, summary) -> Path:
    from .html import _env

    runs = []
    for run_id in reversed(order):
        meta = load_meta(Path(results_root) / run_id)
        g = df[df["run_id"] == run_id]
        page = Path(reports_root) / run_id / "index.html"
        runs.append({"run_id": run_id, "started_at": meta.get("started_at"),
                     "status": meta.get("status"), "git_commit": meta.get("git_commit"),
                     "n_rows": len(g), "n_ok": int((g["status"] == "ok").sum()),
                     "link": os.path.relpath(page, reports_root) if page.exists() else None})
    html = _env().get_template("history.html.j2").render(
        runs=runs, charts=trend_charts(df, order), summary=summary)
    out = Path(reports_root) / "index.html"
    out.write_text(html, encoding="utf-8")
    return out
