"""First call and compilation: each JIT mode's first call taken apart (trace | lower | compile
| run, and cache lookup when the compilation cache was warm), what a warm persistent cache
saves with both break-evens, and the recompile sweep of the run folder when it has one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jitbench.analysis.first_call import anatomy, cache_effect
from jitbench.report.draw import Job
from jitbench.report.sections import Section, register

SEGMENTS = (("trace", "#9ecae1"), ("lower", "#6baed6"), ("lookup", "#fdae6b"),
            ("compile", "#e6550d"), ("run", "#74c476"))
MAX_BARS = 40


def draw_anatomy(records: list[dict[str, Any]]) -> str | None:
    """Stacked horizontal bars, one per JIT row (and one per warm first call), in ms."""
    from jitbench.report.figures import FULL_WIDTH_IN, pyplot, text, to_data_uri

    bars = []
    for r in records[:MAX_BARS]:
        bars.append((f"{r['label']} · {r['framework']} {r['mode']}", r))
        if "warm" in r:
            bars.append(("   … warm cache", r["warm"]))
    if not bars:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(FULL_WIDTH_IN, 0.6 + 0.28 * len(bars)))
    ys = range(len(bars))[::-1]
    for name, col in SEGMENTS:
        left = [sum(b.get(n, 0.0) for n, _ in SEGMENTS[:[s for s, _ in SEGMENTS].index(name)])
                * 1e3 for _, b in bars]
        ax.barh(list(ys), [b.get(name, 0.0) * 1e3 for _, b in bars], left=left, color=col,
                label=name, height=0.7)
    ax.set_yticks(list(ys), [text(lbl) for lbl, _ in bars], fontsize=8)
    ax.set_xlabel("first call (ms)")
    ax.legend(ncols=len(SEGMENTS), loc="lower right", fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return to_data_uri(fig)


def _figures(run) -> dict[str, Job]:
    records = anatomy(run.df)
    return {"anatomy": Job(draw_anatomy, (records,), weight=len(records) / 10)} \
        if records else {}


def _data(run, images) -> dict[str, Any]:
    from jitbench.report.recompilation import block
    from jitbench.run.sweep import load

    run_dir = run.meta.get("run_dir")
    sweep_html = block(load(Path(run_dir))) if run_dir else ""
    return {"anatomy_img": images.get("anatomy"), "n_anatomy": len(anatomy(run.df)),
            "cache": cache_effect(run.df), "compile_cache": run.meta.get("compile_cache"),
            "sweep_html": sweep_html}


register(Section(name="first_call", title="First call and compilation", order=25, data=_data,
                 figures=_figures))
