"""reports/index.html: the runs, per-series trends of the drift-proof quantities the nightly
judges (jitbench.analysis.history), and the latest verdict."""

from __future__ import annotations

import math
import os
from pathlib import Path

from jitbench.analysis.history import trend
from jitbench.report import figures
from jitbench.results.files import load_acceptance, load_meta, load_summary
from jitbench.results.run_folder import RECHECKS, REPEATS


SPARK_W, SPARK_H = 120, 22


def sparkline(values: list[float | None]) -> str:
    """An inline SVG of ``values`` (speedups, oldest first; None where a night has none) on a
    log scale, the latest night as a dot: a series' history at a glance, no image to load."""
    pts = [(i, math.log(v)) for i, v in enumerate(values) if v and v > 0]
    if not pts:
        return ""
    lo, hi = min(y for _, y in pts), max(y for _, y in pts)
    span, n = (hi - lo) or 1.0, max(1, len(values) - 1)

    def xy(i, y):
        return (f"{2 + (SPARK_W - 4) * i / n:.1f}",
                f"{SPARK_H - 2 - (SPARK_H - 4) * (y - lo) / span:.1f}")

    line = " ".join(",".join(xy(i, y)) for i, y in pts)
    cx, cy = xy(*pts[-1])
    return (f'<svg class="spark" width="{SPARK_W}" height="{SPARK_H}" role="img" '
            f'aria-label="speedup over {len(pts)} nights, log scale">'
            f'<polyline fill="none" stroke="#555" stroke-width="1" points="{line}"/>'
            f'<circle cx="{cx}" cy="{cy}" r="2.2" fill="#c00"/></svg>')


def _report_link(reports_root: Path, run_id: str | None) -> str | None:
    if not run_id:
        return None
    page = Path(reports_root) / run_id / "index.html"
    return os.path.relpath(page, reports_root) if page.exists() else None


def series_table(h, summary, reports_root: Path) -> list[dict]:
    """One row per JIT series (jit_ratio): its sparkline of speedups, the latest speedup with
    its interval and verdict, the smallest step the paired rule sees in it
    (``detectors.paired_night``'s ``visible``), and, where the latest night flagged it, the
    step, the night it began and links to the reports of the nights before and after.
    Flagged series first."""
    pts = h.points[h.points["metric"] == "jit_ratio"]
    if pts.empty:
        return []
    order = {r: i for i, r in enumerate(h.order)}
    latest = h.order[-1]
    before = h.order[-2] if len(h.order) > 1 else None
    flagged = {}
    for kind in ("suspected", "confirmed"):
        for r in summary.get(kind) or []:
            if r.get("metric") == "jit_ratio":
                flagged[r["series"]] = dict(r, kind=kind)
    tests = h.tests
    visible = ({} if tests is None or "visible_step" not in tests else
               {s: v for s, m, v in zip(tests["series"], tests["metric"], tests["visible_step"])
                if m == "jit_ratio" and isinstance(v, float) and v == v})
    verdicts = {}
    if "verdict" in h.df.columns:
        last = h.df[(h.df["run_id"] == latest)]
        verdicts = {c: v for c, v in zip(last["case_id"], last["verdict"]) if isinstance(v, str)}
    rows = []
    for series, g in pts.groupby("series", sort=True):
        g = g.sort_values("run_index")
        values = [None] * len(h.order)
        for run_id, v in zip(g["run_id"], g["value"]):
            values[order[run_id]] = 1.0 / v if v else None
        now = g[g["run_id"] == latest]
        rec = now.iloc[0].to_dict() if len(now) else None
        flag = flagged.get(series)
        low, high = (rec or {}).get("low"), (rec or {}).get("high")
        rows.append({
            "series": series, "case_id": g["case_id"].iloc[-1], "spark": sparkline(values),
            "speedup": (1.0 / rec["value"]) if rec else None,
            "interval": (1.0 / high, 1.0 / low) if rec and low == low and high == high
            and low and high else None,
            "verdict": verdicts.get(g["case_id"].iloc[-1], ""), "visible": visible.get(series),
            "flag": flag and flag["kind"], "step": flag and flag.get("change"),
            "began": latest if flag else None,
            "before_link": _report_link(reports_root, before) if flag else None,
            "after_link": _report_link(reports_root, latest) if flag else None,
            "before": before, "n": int(g["value"].notna().sum())})
    rank = {"confirmed": 0, "suspected": 1, None: 2}
    return sorted(rows, key=lambda r: (rank[r["flag"]], r["series"]))


def trend_charts(points, order) -> list[dict]:
    """Small multiples, one figure per workload: a small panel per JIT series (its speedup
    over its interleaved baseline, 1 / jit_ratio, night by night, titled by the
    series), so no panel holds more than one line and no legend covers the data."""
    from matplotlib import ticker

    plt = figures.pyplot()
    charts = []
    ratio = trend(points, order, "jit_ratio")
    workloads = sorted({s.split("/")[0] for s in ratio.columns})
    x = list(range(len(order)))
    for workload in workloads:
        cols = sorted(c for c in ratio.columns if c.split("/")[0] == workload)
        ncols = min(4, len(cols))
        nrows = math.ceil(len(cols) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 1.9 * nrows),
                                 squeeze=False, sharex=True)
        values = ratio.reindex(order)
        for ax, col in zip(axes.flat, cols):
            y = 1.0 / values[col]
            ax.plot(x, y, marker="o", markersize=2.5, linewidth=0.9, color="#444")
            if y.notna().any():
                mid = float(y.median())
                ax.axhline(mid, color="#999", linewidth=0.6, linestyle=":")
                # at least +-10% of the median in view: a night's noise must not look like
                # a cliff because the panel zoomed in on it
                lo, hi = float(y.min()), float(y.max())
                ax.set_ylim(min(lo, mid / 1.1) / 1.01, max(hi, mid * 1.1) * 1.01)
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.3g}×"))
            ax.set_title(col.split("/", 1)[1].replace("/", " "), fontsize=6.5)
            ax.tick_params(labelsize=6)
        for ax in list(axes.flat)[len(cols):]:
            ax.axis("off")
        fig.suptitle(f"{workload}: JIT speedup vs its interleaved baseline, night by night "
                     f"(dotted: median; at least ±10% in view)", fontsize=9)
        fig.tight_layout(rect=(0, 0, 1, 0.97))
        charts.append({"workload": workload, "img": figures.to_data_uri(fig),
                       "n_points": len(order), "n_series": len(cols)})
    return charts


def _span(meta) -> tuple[float, float] | None:
    """(start, end) of a run in seconds since the epoch, from its meta (None if unknown)."""
    import datetime as dt

    try:
        start = dt.datetime.fromisoformat(meta["started_at"]).timestamp()
        end = dt.datetime.fromisoformat(meta["finished_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
    return (start, end) if end >= start else None


def _extra_seconds(run_dir: Path, folder: str) -> float | None:
    """Wall seconds the night's further runs added: its repeats in more fresh processes
    (``repeats/``) or its re-measurements (``rechecks/``), runs that overlapped in time
    counted once and none of the night's own run; None without any."""
    spans = [_span(load_meta(d)) for d in sorted((run_dir / folder).glob("*")) if d.is_dir()]
    spans = sorted(s for s in spans if s)
    if not spans:
        return None
    night = _span(load_meta(run_dir)) or (0.0, 0.0)
    total, reach = 0.0, -float("inf")
    for start, end in spans:  # the union of the spans, less the night's own
        start = max(start, reach)
        if end > start:
            total += end - start - max(0.0, min(end, night[1]) - max(start, night[0]))
            reach = end
    return total


def _change_verdict(run_dir: Path) -> str | None:
    """A change night's line in the runs table: what changed, and the A/B's verdicts (from
    the night's own summary); None on a night nothing changed or not measured side by side."""
    change = load_summary(run_dir).get("change") or {}
    if not change.get("changes"):
        return None
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted((change.get("verdicts") or {}).items()))
    accepted = load_acceptance(run_dir)
    return "; ".join(change["changes"]) + (f" (accepted: {accepted['reason']})" if accepted
                                           else "") + (
        f": side by side{' in duets' if change.get('pairing') == 'duet' else ''}, {verdicts}"
        if change.get("run") else
        f": not measured side by side ({change.get('blocked')})" if change.get("blocked")
        else "")


def write_history_page(h, results_root: Path, reports_root: Path, summary) -> Path:
    """``h``: jitbench.nightly.past_nights.History; ``summary``: what nightly-summary.json holds."""
    from jitbench.report.html import template_environment
    from jitbench.report.sections.method import precisions

    from jitbench.analysis.machine import machine_speed

    runs = []
    before = dict(zip(h.order[1:], h.order))
    for run_id in reversed(h.order):
        meta = load_meta(Path(results_root) / run_id)
        g = h.df[h.df["run_id"] == run_id]
        page = Path(reports_root) / run_id / "index.html"
        runs.append({"run_id": run_id, "started_at": meta.get("started_at"),
                     "status": meta.get("status"), "git_commit": meta.get("git_commit"),
                     "cost_s": meta.get("elapsed_s"),
                     "repeat_s": _extra_seconds(Path(results_root) / run_id, REPEATS),
                     "recheck_s": _extra_seconds(Path(results_root) / run_id, RECHECKS),
                     "machine": (machine_speed(h.df, before[run_id], run_id)
                                 if run_id in before else None),
                     "compared": run_id in h.judged,
                     "change": _change_verdict(Path(results_root) / run_id),
                     "n_rows": len(g), "n_ok": int((g["status"] == "ok").sum()),
                     "link": os.path.relpath(page, reports_root) if page.exists() else None})
    html = template_environment().get_template("history.html.j2").render(
        runs=runs, charts=trend_charts(h.points, h.order), summary=summary,
        series=series_table(h, summary, Path(reports_root)),
        precisions=precisions(h.df[h.df["run_id"] == h.order[-1]]))
    out = Path(reports_root) / "index.html"
    out.write_text(html, encoding="utf-8")
    return out
