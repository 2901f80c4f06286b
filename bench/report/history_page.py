"""reports/index.html: the runs, per-series trends of the drift-proof quantities the nightly
judges (bench.analysis.history), and the latest verdict."""

from __future__ import annotations

import os
from pathlib import Path

from bench.analysis.history import trend
from bench.report import figures
from bench.results.files import load_meta


def trend_charts(points, order) -> list[dict]:
    """One figure per workload, two panels: JIT speedup over its interleaved baseline (1 /
    jit_ratio), and the JIT-off time x the run's probe GFLOP/s; one line per series."""
    plt = figures.pyplot()
    charts = []
    ratio, base = trend(points, order, "jit_ratio"), trend(points, order, "baseline_norm")
    workloads = sorted({s.split("/")[0] for s in [*ratio.columns, *base.columns]})
    x = list(range(len(order)))
    for workload in workloads:
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        n_points = 0
        for ax, wide, invert, ylabel in (
                (axes[0], ratio, True, "JIT speedup vs its baseline (same run, log)"),
                (axes[1], base, False, "JIT-off median s × probe GFLOP/s (log)")):
            cols = [c for c in wide.columns if c.split("/")[0] == workload]
            col_values = wide.reindex(order)
            for col in cols:
                y = 1.0 / col_values[col] if invert else col_values[col]
                ax.plot(x, y, marker="o", linewidth=1, label=col.split("/", 1)[1])
                n_points = max(n_points, int(y.notna().sum()))
            ax.set_yscale("log")
            ax.set_xticks(x)
            ax.set_xticklabels(order, rotation=30, ha="right", fontsize=7)
            ax.set_xlabel("run (oldest → newest)")
            ax.set_ylabel(ylabel, fontsize=8)
            if cols:
                ax.legend(fontsize=5, loc="best")
        fig.suptitle(f"{workload}: drift-proof series over runs")
        fig.tight_layout()
        charts.append({"workload": workload, "img": figures.to_data_uri(fig),
                       "n_points": n_points})
    return charts


def write_history_page(h, results_root: Path, reports_root: Path, summary) -> Path:
    """``h``: bench.nightly.night.History; ``summary``: what nightly-summary.json holds."""
    from bench.report.html import _env

    runs = []
    for run_id in reversed(h.order):
        meta = load_meta(Path(results_root) / run_id)
        g = h.df[h.df["run_id"] == run_id]
        page = Path(reports_root) / run_id / "index.html"
        runs.append({"run_id": run_id, "started_at": meta.get("started_at"),
                     "status": meta.get("status"), "git_commit": meta.get("git_commit"),
                     "n_rows": len(g), "n_ok": int((g["status"] == "ok").sum()),
                     "link": os.path.relpath(page, reports_root) if page.exists() else None})
    html = _env().get_template("history.html.j2").render(
        runs=runs, charts=trend_charts(h.points, h.order), summary=summary)
    out = Path(reports_root) / "index.html"
    out.write_text(html, encoding="utf-8")
    return out
