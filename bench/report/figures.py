"""matplotlib figures, returned as base64 PNG data URIs so the page stands alone."""

from __future__ import annotations

import base64
import io


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # no display; set before pyplot is imported
    import matplotlib.pyplot as plt

    return plt


def to_data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    _plt().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def speedup_chart(sp, title: str) -> str | None:
    """Bar chart: speedup per size for every (framework, JIT mode vs baseline) series."""
    if sp.empty:
        return None
    plt = _plt()
    sp = sp.copy()
    sp["series"] = (sp["framework"] + " " + sp["mode"] + " vs " + sp["baseline"]
                    + " (" + sp["variant"] + ", " + sp["dtype"] + ", " + sp["device"] + ")")
    table = sp.pivot_table(index="size", columns="series", values="speedup", aggfunc="first")
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.35 * len(table.columns) * len(table.index) / 2))
    table.plot.barh(ax=ax, width=0.8)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("speedup = JIT-off median / JIT-on median (log scale; > 1: JIT faster)")
    ax.set_ylabel("size")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return to_data_uri(fig)
