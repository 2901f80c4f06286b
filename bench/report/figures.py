"""matplotlib figures, returned as base64 PNG data URIs so the page stands alone.

Each function takes the DataFrames of ``bench.analysis`` and returns a ``data:`` URI, or None
when there is nothing to draw. Every axis carries its unit; time axes are log-scaled and
labelled in s / ms / µs.
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np

from . import fmt

DPI = 100
FULL_WIDTH_IN = 12.0  # ~1200 px at DPI 100: the page's content width at 1280 px

# One colour per (framework, mode), the same in every figure.
MODE_COLORS = {
    ("tf", "eager"): "#8da0cb", ("tf", "graph"): "#1f5fa8", ("tf", "xla"): "#e6550d",
    ("tf", "autoclustering"): "#b2182b", ("jax", "eager"): "#66a61e", ("jax", "jit"): "#7b3294",
}
VERDICT_COLORS = {"faster": "#1a7f37", "slower": "#c62828", "no difference": "#777777"}


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display; set before pyplot is imported
    import matplotlib.pyplot as plt

    return plt


def to_data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _text(s) -> str:
    """Run strings reach matplotlib as plain text: '$' would start mathtext."""
    return str(s).replace("$", r"\$")


def _color(framework, mode) -> str:
    return MODE_COLORS.get((framework, mode), "#444444")


def _log_axis(axis, label) -> None:
    """Label a log axis with ``label(value)``; minor ticks get labels (at 2 and 5) only when
    the axis spans too little for its decades to carry enough major labels."""
    from matplotlib.ticker import FuncFormatter

    def minor(v, _):
        lo, hi = axis.get_view_interval()
        if not (v > 0 and lo > 0) or hi / lo > 30:
            return ""
        mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9)
        return label(v) if round(mantissa) in (2, 5) or hi / lo < 4 else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _: label(v)))
    axis.set_minor_formatter(FuncFormatter(minor))


def _time_axis(axis) -> None:
    _log_axis(axis, fmt.secs)


def _flop_axis(axis) -> None:
    _log_axis(axis, fmt.flop)


def _ratio_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))


def _grid(n: int, cols: int, w: float = FULL_WIDTH_IN, h: float = 3.0,
          hspace_in: float = 1.0, wspace: float = 0.32):
    """n panels in rows of ``cols``; spacing set by hand (tight_layout costs ~1 s a figure),
    ``hspace_in`` inches between rows for titles and x labels."""
    plt = pyplot()
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w, h * rows), squeeze=False)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.8 / (h * rows),
                        top=1 - 0.55 / (h * rows), wspace=wspace,
                        hspace=hspace_in / max(h - hspace_in, 0.5))
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _finite(*vals) -> bool:
    return all(v is not None and not (isinstance(v, float) and not math.isfinite(v))
               for v in vals)


# --------------------------------------------------------------------------- overview

def overview_speedups(sp) -> str | None:
    """Every case's speedup for its nearest pair, with its 95% interval, log x."""
    if sp.empty:
        return None
    plt = pyplot()
    sp = sp.sort_values(["workload", "variant", "dtype", "framework", "mode", "flops", "size"])
    n = len(sp)
    fig, ax = plt.subplots(figsize=(FULL_WIDTH_IN * 0.75, 1.0 + 0.24 * n))
    y = np.arange(n)[::-1]
    labels = []
    for yi, r in zip(y, sp.to_dict("records")):
        c = VERDICT_COLORS.get(r["verdict"], "#777")
        lo, hi = r["ci_low"], r["ci_high"]
        if _finite(lo, hi):
            ax.plot([lo, hi], [yi, yi], color=c, linewidth=2.2, alpha=0.6)
        ax.plot([r["speedup"]], [yi], "o", color=c, markersize=5)
        labels.append(_text(f"{r['workload']} {r['variant']} {r['dtype']} {r['size']} · "
                            f"{r['framework']} {r['mode']} vs {r['baseline']}"))
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    _ratio_axis(ax.xaxis)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7.5)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("speedup = JIT-off median / JIT-on median [×] (log; > 1: JIT faster); "
                  "bar: 95% bootstrap interval")
    ax.grid(axis="x", which="major", alpha=0.3)
    # no legend (it would hide points): the page's caption says what the colours mean
    ax.set_title("JIT speedup of every case, each JIT mode against its nearest JIT-off mode")
    return to_data_uri(fig)


# --------------------------------------------------------------------------- per workload

def speedup_vs_size(sp, crossings) -> str | None:
    """Speedup against work per call (log x), one panel per framework, every pair of modes;
    the nearest pair solid, the others dashed; crossovers marked."""
    if sp.empty or sp.groupby(["variant", "dtype"])["work"].nunique().max() < 2:
        return None  # one size per series: the overview chart already shows these points
    frameworks = sorted(sp["framework"].unique())
    fig, axes = _grid(len(frameworks), 2, h=3.8)
    for ax, framework in zip(axes, frameworks):
        s = sp[sp["framework"] == framework]
        for keys, g in s.groupby(["variant", "dtype", "mode", "baseline"], sort=True):
            variant, dtype, mode, base = keys
            g = g.sort_values("work")
            near = bool(g["nearest"].iloc[0])
            yerr = None
            if g["ci_low"].notna().all():
                yerr = [np.maximum(g["speedup"] - g["ci_low"], 0),
                        np.maximum(g["ci_high"] - g["speedup"], 0)]
            ax.errorbar(g["work"], g["speedup"], yerr=yerr, marker="o", markersize=4,
                        capsize=2, linewidth=1.6 if near else 0.9,
                        linestyle="-" if near else "--", color=_color(framework, mode),
                        alpha=1.0 if near else 0.55,
                        label=_text(f"{mode} vs {base} · {variant} {dtype}"))
        c = crossings[(crossings["framework"] == framework) & crossings["crossover"]]
        for r in c.to_dict("records"):
            if _finite(r["crossover_work"]):
                ax.axvline(r["crossover_work"], color=_color(framework, r["mode"]),
                           linestyle=":", linewidth=1)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _ratio_axis(ax.yaxis)
        _flop_axis(ax.xaxis)
        ax.set_xlabel("work per call (log)")
        ax.set_ylabel("speedup [×] (log; > 1: JIT faster)")
        ax.set_title(f"{framework}: speedup vs size (dotted: crossover)", fontsize=10)
        ax.grid(alpha=0.3, which="major")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
                  frameon=False)
    return to_data_uri(fig)


def time_distributions(rows) -> str | None:
    """Box plot of the raw per-call samples of every mode, one panel per case."""
    ok = rows[rows["status"] == "ok"]
    ok = ok[ok["samples"].map(lambda s: isinstance(s, (list, tuple)) and len(s) > 0)]
    if ok.empty:
        return None
    panels = list(ok.groupby(["variant", "dtype", "work", "size", "device"], sort=True))
    fig, axes = _grid(len(panels), 3, h=2.9)
    for ax, (keys, g) in zip(axes, panels):
        variant, dtype, _, size, device = keys
        g = g.sort_values(["framework", "jit", "mode"])
        data = [np.asarray(s, float) for s in g["samples"]]
        labels = [f"{f}\n" + ("auto-\nclustering" if m == "autoclustering" else m)
                  for f, m in zip(g["framework"], g["mode"])]
        bp = ax.boxplot(data, widths=0.6, patch_artist=True, showfliers=True,
                        flierprops=dict(markersize=2, alpha=0.4))
        for patch, f, m, jit in zip(bp["boxes"], g["framework"], g["mode"], g["jit"]):
            patch.set_facecolor(_color(f, m))
            patch.set_alpha(0.75)
            patch.set_hatch("//" if jit else "")
        for med in bp["medians"]:
            med.set_color("black")
        ax.set_xticks(range(1, len(labels) + 1))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_yscale("log")
        _time_axis(ax.yaxis)
        ax.set_ylabel("time per call (log)", fontsize=8)
        ax.tick_params(axis="y", which="both", labelsize=7)
        ax.set_title(_text(f"{variant} · {dtype} · {size} · {device}"), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("time per call of every timed sample (box: quartiles; hatched: JIT on)",
                 fontsize=10, y=1.0, va="bottom")
    return to_data_uri(fig)


def compile_vs_steady(rows) -> str | None:
    """Compile cost (first call − median) against the steady-state median, every mode;
    the diagonals say how many steady calls the compilation is worth."""
    ok = rows[(rows["status"] == "ok") & rows["median_s"].notna()
              & rows["compile_cost_s"].notna()]
    if ok.empty:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(FULL_WIDTH_IN * 0.6, 4.6))
    floor = max(float(ok["median_s"].min()) * 0.1, 1e-7)
    for (framework, mode), g in ok.groupby(["framework", "mode"], sort=True):
        jit = bool(g["jit"].iloc[0])
        ax.scatter(g["median_s"], np.maximum(g["compile_cost_s"], floor), s=28,
                   marker="^" if jit else "o", color=_color(framework, mode),
                   label=f"{framework} {mode}" + (" (JIT)" if jit else ""), alpha=0.85)
    xs = np.array([ok["median_s"].min() / 2, ok["median_s"].max() * 2])
    lo = max(min(float(np.maximum(ok["compile_cost_s"], floor).min()), xs[0]) / 2, floor / 2)
    hi = max(float(ok["compile_cost_s"].max()), xs[1]) * 2
    for k in (1, 10, 100, 1000, 10000, 100000):
        ax.plot(xs, xs * k, color="#999", linewidth=0.7, linestyle=":")
        # label each diagonal where it leaves the plot (top or right edge)
        x = min(xs[1], hi / k)
        if x * k > lo and x > xs[0]:
            ax.annotate(f"= {k:g} call{'s' if k > 1 else ''}", (x / 1.15, x * k / 1.15),
                        fontsize=7, color="#555", ha="right", va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _time_axis(ax.xaxis)
    _time_axis(ax.yaxis)
    ax.set_xlim(xs[0], xs[1])
    ax.set_ylim(lo, hi)
    ax.set_xlabel("steady-state time per call (median, log)")
    ax.set_ylabel("compile cost = first call − median (log)")
    ax.set_title("what the first call costs, in steady-state calls (dotted diagonals)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return to_data_uri(fig)


def amortized(curves, sp) -> str | None:
    """Mean cost per call over the first N calls, every mode of each case; the nearest pair's
    break-even point marked."""
    if curves.empty:
        return None
    panels = list(curves.groupby(["variant", "dtype", "size", "framework", "device"],
                                 sort=False))
    order = {k: i for i, k in enumerate(
        sp.sort_values(["variant", "dtype", "flops", "framework"])
        [["variant", "dtype", "size", "framework", "device"]]
        .drop_duplicates().itertuples(index=False, name=None))}
    panels.sort(key=lambda p: order.get(p[0], 1 << 30))
    fig, axes = _grid(len(panels), 4, h=2.8, wspace=0.42)
    for ax, (keys, g) in zip(axes, panels):
        variant, dtype, size, framework, device = keys
        for mode, m in g.groupby("mode", sort=True):
            jit = bool(m["jit"].iloc[0])
            ax.plot(m["n_calls"], m["per_call_s"], color=_color(framework, mode),
                    linewidth=1.6, linestyle="-" if jit else "--", label=mode)
        s = sp[(sp["variant"] == variant) & (sp["dtype"] == dtype) & (sp["size"] == size)
               & (sp["framework"] == framework) & (sp["device"] == device) & sp["nearest"]]
        notes = []
        for r in s.to_dict("records"):
            be = r["break_even_calls"]
            if _finite(be):
                at = g[(g["mode"] == r["mode"])]
                y = float(np.interp(be, at["n_calls"], at["per_call_s"]))
                ax.axvline(be, color=_color(framework, r["mode"]), linestyle=":", linewidth=1)
                ax.plot([be], [y], "o", color=_color(framework, r["mode"]), markersize=6,
                        markeredgecolor="black")
            notes.append(f"{r['mode']}: {fmt.calls(be)}" if _finite(be) or be == math.inf
                         else f"{r['mode']}: unclear")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _time_axis(ax.yaxis)
        ax.tick_params(which="both", labelsize=7)
        ax.set_xlabel("calls N (log)", fontsize=8)
        ax.set_ylabel("mean time per call\nover N calls (log)", fontsize=7.5)
        title = _text(f"{framework} · {variant} {dtype} · {size}")
        if notes:
            title += "\nbreak-even " + "; ".join(notes)
        ax.set_title(title, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper right")
    fig.suptitle("amortized cost: first call + calls 2..5 as measured + the median for every "
                 "further call (dashed: JIT off; dot: break-even vs the nearest JIT-off mode)",
                 fontsize=10, y=1.0, va="bottom")
    return to_data_uri(fig)


def scaling(rows, crossings, floors) -> str | None:
    """Median time per call against work per call (log-log), every mode, IQR bars; the
    crossover of each JIT mode against its nearest baseline and each mode's dispatch floor."""
    ok = rows[(rows["status"] == "ok") & rows["median_s"].notna()]
    if ok.empty or ok.groupby(["variant", "dtype"])["work"].nunique().max() < 2:
        return None  # one size per series: nothing scales
    panels = list(ok.groupby(["variant", "dtype", "framework", "device"], sort=True))
    fig, axes = _grid(len(panels), 3, h=3.3)
    for ax, (keys, g) in zip(axes, panels):
        variant, dtype, framework, device = keys
        for mode, m in g.groupby("mode", sort=True):
            m = m.sort_values("work")
            jit = bool(m["jit"].iloc[0])
            iqr = m["iqr_s"].fillna(0) / 2
            ax.errorbar(m["work"], m["median_s"], yerr=[np.minimum(iqr, m["median_s"] * 0.9),
                                                        iqr],
                        marker="^" if jit else "o", markersize=4, capsize=2,
                        linestyle="-" if jit else "--", color=_color(framework, mode),
                        label=mode)
            f = floors[(floors["framework"] == framework) & (floors["mode"] == mode)
                       & (floors["device"] == device)]["floor_s"]
            if len(f) and _finite(float(f.iloc[0])):
                ax.axhline(float(f.iloc[0]), color=_color(framework, mode), linewidth=0.8,
                           linestyle=":", alpha=0.8)
        c = crossings[(crossings["variant"] == variant) & (crossings["dtype"] == dtype)
                      & (crossings["framework"] == framework)
                      & (crossings["device"] == device) & crossings["crossover"]]
        for r in c.to_dict("records"):
            if _finite(r["crossover_work"]):
                ax.axvline(r["crossover_work"], color="black", linestyle="-.", linewidth=0.9)
                ax.annotate(f"{r['mode']}/{r['baseline']}\ncrossover",
                            (r["crossover_work"], ax.get_ylim()[1]), fontsize=6.5,
                            ha="left", va="top", rotation=90)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _time_axis(ax.yaxis)
        ax.tick_params(which="both", labelsize=7)
        _flop_axis(ax.xaxis)
        ax.set_xlabel("work per call (log)", fontsize=8)
        ax.set_ylabel("median time per call (log)", fontsize=8)
        ax.set_title(_text(f"{framework} · {variant} · {dtype} · {device}"), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle("scaling with size (bars: IQR; dotted lines: each mode's dispatch floor; "
                 "dash-dot: crossover vs the nearest JIT-off mode)", fontsize=10, y=1.0,
                 va="bottom")
    return to_data_uri(fig)


# --------------------------------------------------------------------------- compare

def compare_chart(cmp) -> str | None:
    """Change of every row between two runs, with its 95% interval; flagged rows coloured."""
    both = cmp[cmp["ratio"].notna()]
    if both.empty:
        return None
    plt = pyplot()
    both = both.sort_values(["workload", "variant", "dtype", "size", "framework", "mode"])
    n = len(both)
    fig, ax = plt.subplots(figsize=(FULL_WIDTH_IN * 0.75, 1.0 + 0.2 * n))
    y = np.arange(n)[::-1]
    colors = {"regression": "#c62828", "improvement": "#1a7f37", "unchanged": "#777777"}
    labels = []
    for yi, r in zip(y, both.to_dict("records")):
        c = colors.get(r["verdict"], "#777")
        if _finite(r["ci_low"], r["ci_high"]):
            ax.plot([100 * (r["ci_low"] - 1), 100 * (r["ci_high"] - 1)], [yi, yi], color=c,
                    linewidth=2, alpha=0.6)
        ax.plot([r["change_pct"]], [yi], "o", color=c, markersize=4)
        labels.append(_text(f"{r['workload']} {r['variant']} {r['dtype']} {r['size']} · "
                            f"{r['framework']} {r['mode']}"))
    ax.axvline(0, color="black", linewidth=1)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("change of the median time per call, B vs A [%] (> 0: B slower); "
                  "bar: 95% bootstrap interval")
    ax.grid(axis="x", alpha=0.3)
    return to_data_uri(fig)
