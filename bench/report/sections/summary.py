"""The summary: headline tiles and a few findings in plain sentences; then the speedups: every
case's speedup at a glance and the geomean table (a section of its own, which needs pairs)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jitbench import analysis
from jitbench.report import figures as F
from jitbench.report import fmt
from jitbench.report.draw import Deferred, Job
from jitbench.report.facts import PAIRS, nearest_only
from jitbench.report.sections import Section, register


def _findings(sp, gm, cross, facts, summ, no_pairs: str | None = None) -> list[str]:
    """A few plain sentences a reader gets in a minute; every number is in the tables.
    ``no_pairs``: why the run has no speedup (``PAIRS``), said first."""
    out = [f"No speedups: {no_pairs}."] if no_pairs else []
    for g in gm.loc[gm["nearest"]].to_dict("records"):
        out.append(f"{g['framework']} {g['mode']} vs {g['baseline']} on {g['device']}: "
                   f"geomean {fmt.times(g['geomean'])} over {g['n_included']} cases "
                   f"({g['n_faster']} faster, {g['n_slower']} slower, {g['n_same']} no "
                   f"significant difference; {g['n_excluded']} excluded).")
    near = sp.loc[sp["nearest"]]
    sig = near.loc[near["significant"]]
    if len(sig):
        best = sig.loc[sig["speedup"].idxmax()]
        if best["speedup"] > 1:
            ci = fmt.interval(best["ci_low"], best["ci_high"])
            out.append(f"Largest JIT win: {_case(best)} {best['mode']} vs {best['baseline']}, "
                       f"{fmt.times(best['speedup'])} {ci}"
                       f", paying off after {fmt.calls(best['break_even_calls'])}.")
        worst = sig.loc[sig["speedup"].idxmin()]
        if worst["speedup"] < 1:
            out.append(f"Largest JIT loss: {_case(worst)} {worst['mode']} vs "
                       f"{worst['baseline']}, {fmt.times(worst['speedup'])} "
                       f"{fmt.interval(worst['ci_low'], worst['ci_high'])}.")
    for c in nearest_only(cross.loc[cross["crossover"]]).to_dict("records"):
        out.append(f"Crossover: {c['workload']} {c['variant']} {c['dtype']} {c['framework']} "
                   f"{c['mode']} vs {c['baseline']}: {c['summary']}.")
    bound = facts[facts["dispatch_bound"] & (facts["status"] == "ok")]
    if len(bound):
        ex = bound.loc[bound["floor_share"].idxmax()]
        out.append(f"{len(bound)} rows are dispatch-bound: their mode's no-op call takes more "
                   f"than half their time (e.g. {ex['workload']} {ex['size']} {ex['framework']} "
                   f"{ex['mode']}: floor {fmt.secs(ex['dispatch_floor_s'])} of "
                   f"{fmt.secs(ex['median_s'])}). There, JIT on/off compares framework "
                   f"overheads, not compiled code.")
    noisy = facts[facts["noise"] == "noisy"]
    if len(noisy):
        out.append(f"{len(noisy)} of {int((facts['noise'] != 'n/a').sum())} measured rows are "
                   f"noisy (IQR above {analysis.NOISY_REL_IQR:.0%} of the median, CPU steal "
                   f"above {analysis.NOISY_STEAL_PCT:g}%, or compiling while timed); their "
                   f"intervals are wide, so trust only their significant verdicts.")
    if summ["n_failed"]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summ["status_counts"].items())
                           if k not in ("ok", "skipped"))
        out.append(f"{summ['n_failed']} rows did not pass ({counts}): see Failures. They are "
                   f"left out of every speedup and geomean.")
    return out


def _case(r) -> str:
    return f"{r['workload']} {r['variant']} {r['dtype']} {r['size']} {r['framework']}"


def _tiles(gm, summ, peaks, floors) -> list[dict[str, Any]]:
    tiles = []
    for g in gm.loc[gm["nearest"]].to_dict("records"):
        kind = "good" if g["geomean"] > 1 else "bad" if g["geomean"] < 1 else ""
        tiles.append({"value": fmt.times(g["geomean"]),
                      "label": f"{g['framework']} {g['mode']} vs {g['baseline']} · "
                               f"{g['device']}",
                      "detail": f"geomean speedup over {g['n_included']} cases "
                                f"({g['n_faster']} faster, {g['n_slower']} slower, "
                                f"{g['n_same']} n.s.); {g['n_excluded']} excluded"
                                + (f", {g['n_skipped']} skipped" if g["n_skipped"] else ""),
                      "kind": kind})
    vc, aa = summ.get("verdict_counts") or {}, summ.get("aa_verdict_counts") or {}
    if vc:
        order = ["faster", "slower", "same", "unresolved"]
        parts = [f"{n} {v}" for v, n in vc.items() if v not in order]
        if aa:
            wrong = aa.get("faster", 0) + aa.get("slower", 0)
            parts.append(f"A/A controls: {', '.join(f'{n} {v}' for v, n in aa.items())} "
                         f"({wrong} called faster or slower)")
        if summ.get("n_groups"):
            parts.append(f"{fmt.secs(summ['group_s_median'])} per group (median), "
                         f"{fmt.secs(summ['group_s_total'])} for {summ['n_groups']} groups")
        tiles.append({"value": " · ".join(f"{vc[v]} {v}" for v in order if vc.get(v)),
                      "label": "verdicts of the nearest pairs", "detail": "; ".join(parts),
                      "kind": "wide"})
    tiles.append({"value": fmt.pct(summ["pass_rate"]), "label": "pass rate",
                  "detail": f"{summ['n_ok']} of {summ['n_measured']} rows ok (ran and matched "
                            f"the float64 reference)"
                            + (f"; {summ['n_skipped']} skipped" if summ["n_skipped"] else ""),
                  "kind": "good" if summ["n_failed"] == 0 else "bad"})
    tiles.append({"value": fmt.secs(summ["median_compile_s"]), "label": "median compile cost",
                  "detail": f"first call − steady-state call, over {summ['n_jit_rows']} "
                            f"JIT-on rows", "kind": ""})
    tiles.append({"value": fmt.calls(summ["median_break_even"]),
                  "label": "median break-even",
                  "detail": f"over the {summ['n_break_even']} nearest pairs where JIT is "
                            f"faster; {summ['n_never']} never pay off, {summ['n_unclear']} "
                            f"show no significant difference", "kind": ""})
    for p in peaks.to_dict("records"):
        tiles.append({"value": f"{p['peak_gflops']:.0f} GFLOP/s",
                      "label": f"float32 matmul peak · {p['device']}",
                      "detail": f"best of numpy and every framework mode ({p['peak_source']}),"
                                f" measured before the cases (or kept from an earlier run)", "kind": ""})
    ok = floors[floors["status"].isin(["ok", "derived"])]
    if len(ok):
        tiles.append({"value": " · ".join(f"{r['framework']} {r['mode']} {fmt.secs(r['floor_s'])}"
                                          for r in ok.to_dict("records")),
                      "label": "dispatch floor per mode (no-op call)",
                      "detail": "results near these times measure per-call overhead",
                      "kind": "wide"})
    return tiles


def overview_speedups(sp) -> str | None:
    """Every case's speedup for its nearest pair, with its 95% interval, log x."""
    if sp.empty:
        return None
    plt = F.pyplot()
    sp = sp.sort_values(["workload", "variant", "dtype", "framework", "mode", "flops", "size"])
    n = len(sp)
    fig, ax = plt.subplots(figsize=(F.FULL_WIDTH_IN * 0.75, 1.0 + 0.24 * n))
    y = np.arange(n)[::-1]
    recs = sp.to_dict("records")
    colors = [F.VERDICT_COLORS.get(r["verdict"], "#777") for r in recs]
    bars = [(yi, r["ci_low"], r["ci_high"], c) for yi, r, c in zip(y, recs, colors)
            if F.finite(r["ci_low"], r["ci_high"])]
    if bars:  # one artist for all intervals and one for all points (not two per row)
        by, lo, hi, bc = zip(*bars)
        ax.hlines(by, lo, hi, colors=bc, linewidth=2.2, alpha=0.6)
    ax.scatter([r["speedup"] for r in recs], y, c=colors, s=25, zorder=3)
    labels = [F.text(f"{r['workload']} {r['variant']} {r['dtype']} {r['size']} · "
                     f"{r['framework']} {r['mode']} vs {r['baseline']}") for r in recs]
    ax.axvline(1.0, color="black", linewidth=1)
    F.log_scale(ax, "x")
    F.ratio_axis(ax.xaxis)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7.5)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("speedup = JIT-off median / JIT-on median [×] (log; > 1: JIT faster); "
                  "bar: 95% interval (how it was made: How this was measured)")
    ax.grid(axis="x", which="major", alpha=0.3)
    # no legend (it would hide points): the page's caption says what the colours mean
    F.title(ax, "JIT speedup of every case, each JIT mode against its nearest JIT-off mode")
    return F.to_data_uri(fig)




def _figures(run) -> dict[str, Deferred]:
    return {"overview": Deferred(lambda: _overview_job(run))}  # after the bootstrap


def _overview_job(run) -> Job:
    # drawn first of the figures that wait for the bootstrap: this section's values are
    # computed before the workloads', and wait for it
    return Job(overview_speedups, (run.sp.loc[run.sp["nearest"]],), weight=math.inf)


def _data(run, images) -> dict[str, Any]:
    gm = run.gm_present
    return {"tiles": _tiles(gm, run.headline, run.peaks, run.floors),
            "absent": list(run.absent.values()),
            "findings": _findings(run.sp, gm, run.cross, run.rows, run.headline,
                                  PAIRS.missing(run))}


def _speedups_data(run, images) -> dict[str, Any]:
    geomeans = [dict(g, geomean_text=fmt.times(g["geomean"]),
                     range_text=(f"{fmt.times(g['min_speedup'])} – {fmt.times(g['max_speedup'])}"
                                 if g["n_included"] else "–"))
                for g in run.gm_present.to_dict("records")]
    return {"geomeans": geomeans, "overview": images.get("overview")}


register(Section(name="summary", title="Summary", order=10, data=_data))
register(Section(name="speedups", title="Speedups", order=11, data=_speedups_data,
                 figures=_figures, needs=(PAIRS,)))
