"""The five figures of a workload's section: speedup and time against size, the raw samples,
compile cost against steady state, amortized cost per call. Each takes plain DataFrames (a
workload's slice of ``jitbench.report.facts.RunFacts``) and returns a data URI or None."""

from __future__ import annotations

import math

import numpy as np

from jitbench.report import figures as F
from jitbench.report import fmt


def speedup_vs_size(sp, crossings) -> str | None:
    """Speedup against work per call (log x), one panel per framework, every pair of modes;
    the nearest pair solid, the others dashed; crossovers marked."""
    if sp.empty or sp.groupby(["variant", "dtype"])["work"].nunique().max() < 2:
        return None  # one size per series: the overview chart already shows these points
    frameworks = sorted(sp["framework"].unique())
    fig, axes = F.grid(len(frameworks), 2, h=3.8)
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
                        linestyle="-" if near else "--", color=F.color(framework, mode),
                        alpha=1.0 if near else 0.55,
                        label=F.text(f"{mode} vs {base} · {variant} {dtype}"))
        c = crossings[(crossings["framework"] == framework) & crossings["crossover"]]
        for r in c.to_dict("records"):
            if F.finite(r["crossover_work"]):
                ax.axvline(r["crossover_work"], color=F.color(framework, r["mode"]),
                           linestyle=":", linewidth=1)
        ax.axhline(1.0, color="black", linewidth=1)
        F.log_scale(ax, "x")
        F.log_scale(ax, "y")
        F.ratio_axis(ax.yaxis)
        F.flop_axis(ax.xaxis)
        ax.set_xlabel("work per call (log)")
        ax.set_ylabel("speedup [×] (log; > 1: JIT faster)")
        F.title(ax, f"{framework}: speedup vs size (dotted: crossover)", fontsize=10)
        ax.grid(alpha=0.3, which="major")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
                  frameon=False)
    return F.to_data_uri(fig)


def time_distributions(rows) -> str | None:
    """Box plot of the raw per-call samples of every mode, one panel per case."""
    ok = rows[rows["status"] == "ok"]
    ok = ok[ok["samples"].map(lambda s: isinstance(s, (list, tuple)) and len(s) > 0)]
    if ok.empty:
        return None
    # dropna: a row with neither flops nor a numeric param has no work (NaN), still a panel
    panels = list(ok.groupby(["variant", "dtype", "work", "size", "device"], sort=True,
                             dropna=False))
    fig, axes = F.grid(len(panels), 3, h=2.9)
    for ax, (keys, g) in zip(axes, panels):
        variant, dtype, _, size, device = keys
        g = g.sort_values(["framework", "jit", "mode"])
        data = [np.asarray(s, float) for s in g["samples"]]
        labels = [f"{f}\n{F.mode_label(f, m)}" for f, m in zip(g["framework"], g["mode"])]
        bp = ax.boxplot(data, widths=0.6, patch_artist=True, showfliers=True,
                        flierprops=dict(markersize=2, alpha=0.4))
        for patch, f, m, jit in zip(bp["boxes"], g["framework"], g["mode"], g["jit"]):
            patch.set_facecolor(F.color(f, m))
            patch.set_alpha(0.75)
            patch.set_hatch("//" if jit else "")
        for med in bp["medians"]:
            med.set_color("black")
        ax.set_xticks(range(1, len(labels) + 1))
        ax.set_xticklabels(labels, fontsize=7)
        F.log_scale(ax, "y")
        F.time_axis(ax.yaxis)
        ax.set_ylabel("time per call (log)", fontsize=8)
        ax.tick_params(axis="y", which="both", labelsize=7)
        F.title(ax, F.text(f"{variant} · {dtype} · {size} · {device}"), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("time per call of every timed sample (box: quartiles; hatched: JIT on)",
                 fontsize=10, y=1.0, va="bottom")
    return F.to_data_uri(fig)


def compile_vs_steady(rows) -> str | None:
    """Compile cost (first call − median) against the steady-state median, every mode;
    the diagonals say how many steady calls the compilation is worth."""
    ok = rows[(rows["status"] == "ok") & rows["median_s"].notna()
              & rows["compile_cost_s"].notna()]
    if ok.empty:
        return None
    plt = F.pyplot()
    fig, ax = plt.subplots(figsize=(F.FULL_WIDTH_IN * 0.6, 4.6))
    floor = max(float(ok["median_s"].min()) * 0.1, 1e-7)
    for (framework, mode), g in ok.groupby(["framework", "mode"], sort=True):
        jit = bool(g["jit"].iloc[0])
        ax.scatter(g["median_s"], np.maximum(g["compile_cost_s"], floor), s=28,
                   marker="^" if jit else "o", color=F.color(framework, mode),
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
    F.log_scale(ax, "x")
    F.log_scale(ax, "y")
    F.time_axis(ax.xaxis)
    F.time_axis(ax.yaxis)
    ax.set_xlim(xs[0], xs[1])
    ax.set_ylim(lo, hi)
    ax.set_xlabel("steady-state time per call (median, log)")
    ax.set_ylabel("compile cost = first call − median (log)")
    F.title(ax, "what the first call costs, in steady-state calls (dotted diagonals)",
            fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return F.to_data_uri(fig)


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
    fig, axes = F.grid(len(panels), 4, h=2.8, wspace=0.42)
    for ax, (keys, g) in zip(axes, panels):
        variant, dtype, size, framework, device = keys
        for mode, m in g.groupby("mode", sort=True):
            jit = bool(m["jit"].iloc[0])
            ax.plot(m["n_calls"], m["per_call_s"], color=F.color(framework, mode),
                    linewidth=1.6, linestyle="-" if jit else "--", label=mode)
        s = sp[(sp["variant"] == variant) & (sp["dtype"] == dtype) & (sp["size"] == size)
               & (sp["framework"] == framework) & (sp["device"] == device) & sp["nearest"]]
        notes = []
        for r in s.to_dict("records"):
            be = r["break_even_calls"]
            if F.finite(be):
                at = g[(g["mode"] == r["mode"])]
                y = float(np.interp(be, at["n_calls"], at["per_call_s"]))
                ax.axvline(be, color=F.color(framework, r["mode"]), linestyle=":", linewidth=1)
                ax.plot([be], [y], "o", color=F.color(framework, r["mode"]), markersize=6,
                        markeredgecolor="black")
            notes.append(f"{r['mode']}: {fmt.calls(be)}" if F.finite(be) or be == math.inf
                         else f"{r['mode']}: unclear")
        F.log_scale(ax, "x")
        F.log_scale(ax, "y")
        F.time_axis(ax.yaxis)
        ax.tick_params(which="both", labelsize=7)
        ax.set_xlabel("calls N (log)", fontsize=8)
        ax.set_ylabel("mean time per call\nover N calls (log)", fontsize=7.5)
        title = F.text(f"{framework} · {variant} {dtype} · {size}")
        if notes:
            title += "\nbreak-even " + "; ".join(notes)
        F.title(ax, title, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper right")
    fig.suptitle("amortized cost: first call + calls 2..5 as measured + the median for every "
                 "further call (dashed: JIT off; dot: break-even vs the nearest JIT-off mode)",
                 fontsize=10, y=1.0, va="bottom")
    return F.to_data_uri(fig)


def scaling(rows, crossings, floors) -> str | None:
    """Median time per call against work per call (log-log), every mode, IQR bars; the
    crossover of each JIT mode against its nearest baseline and each mode's dispatch floor."""
    ok = rows[(rows["status"] == "ok") & rows["median_s"].notna()]
    if ok.empty or ok.groupby(["variant", "dtype"])["work"].nunique().max() < 2:
        return None  # one size per series: nothing scales
    panels = list(ok.groupby(["variant", "dtype", "framework", "device"], sort=True))
    fig, axes = F.grid(len(panels), 3, h=3.3)
    for ax, (keys, g) in zip(axes, panels):
        variant, dtype, framework, device = keys
        for mode, m in g.groupby("mode", sort=True):
            m = m.sort_values("work")
            jit = bool(m["jit"].iloc[0])
            iqr = m["iqr_s"].fillna(0) / 2
            ax.errorbar(m["work"], m["median_s"], yerr=[np.minimum(iqr, m["median_s"] * 0.9),
                                                        iqr],
                        marker="^" if jit else "o", markersize=4, capsize=2,
                        linestyle="-" if jit else "--", color=F.color(framework, mode),
                        label=mode)
            f = floors[(floors["framework"] == framework) & (floors["mode"] == mode)
                       & (floors["device"] == device)]["floor_s"]
            if len(f) and F.finite(float(f.iloc[0])):
                ax.axhline(float(f.iloc[0]), color=F.color(framework, mode), linewidth=0.8,
                           linestyle=":", alpha=0.8)
        c = crossings[(crossings["variant"] == variant) & (crossings["dtype"] == dtype)
                      & (crossings["framework"] == framework)
                      & (crossings["device"] == device) & crossings["crossover"]]
        for r in c.to_dict("records"):
            if F.finite(r["crossover_work"]):
                ax.axvline(r["crossover_work"], color="black", linestyle="-.", linewidth=0.9)
                ax.annotate(f"{r['mode']}/{r['baseline']}\ncrossover",
                            (r["crossover_work"], ax.get_ylim()[1]), fontsize=6.5,
                            ha="left", va="top", rotation=90)
        F.log_scale(ax, "x")
        F.log_scale(ax, "y")
        F.time_axis(ax.yaxis)
        ax.tick_params(which="both", labelsize=7)
        F.flop_axis(ax.xaxis)
        ax.set_xlabel("work per call (log)", fontsize=8)
        ax.set_ylabel("median time per call (log)", fontsize=8)
        F.title(ax, F.text(f"{framework} · {variant} · {dtype} · {device}"), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle("scaling with size (bars: IQR; dotted lines: each mode's dispatch floor; "
                 "dash-dot: crossover vs the nearest JIT-off mode)", fontsize=10, y=1.0,
                 va="bottom")
    return F.to_data_uri(fig)


