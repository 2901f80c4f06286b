"""Inside the compiled program: a roofline per workload (both measured ceilings, every mode a
point), what XLA built for each JIT row (programs, kernels, fusions, fingerprint, links to the
HLO and profiler traces kept with --dump-hlo / --profile), and XLA's FLOPs against the
formula's (definitions: ``jitbench.analysis.roofline``)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from jitbench.analysis.roofline import ceilings, flops_check, roofline
from jitbench.define.modes import FRAMEWORKS, SPECS
from jitbench.report import fmt
from jitbench.report.draw import Job
from jitbench.report.facts import isnan, records, text_or
from jitbench.report.sections import Section, register

MAX_WORKLOADS = 12  # figures; the table lists every row


def draw_roofline(name: str, points: list[dict[str, Any]], ceil: list[dict[str, Any]]
                  ) -> str | None:
    """Log-log GFLOP/s against FLOP/byte: the peak (flat) and bandwidth (slope 1) ceilings of
    each device, one point per row (colour: mode; marker: framework)."""
    from jitbench.report import figures as F

    pts = [p for p in points if p["intensity"] > 0 and p["gflops"] > 0]
    if not pts:
        return None
    plt = F.pyplot()
    fig, ax = plt.subplots(figsize=(F.FULL_WIDTH_IN * 0.55, 4.2))
    xs = [p["intensity"] for p in pts]
    lo, hi = min(xs) / 4, max(xs) * 4
    for c in ceil:
        peak, bw = c.get("peak_gflops"), c.get("bandwidth_gbps")
        if peak and bw:
            hi = max(hi, c["ridge"] * 4)
            lo = min(lo, c["ridge"] / 100)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for c in ceil:
        peak, bw = c.get("peak_gflops"), c.get("bandwidth_gbps")
        if peak:
            ax.axhline(peak, color="#333", linewidth=1,
                       label=F.text(f"{c['device']} peak {peak:.3g} GFLOP/s "
                                    f"({c['peak_source']})"))
        if bw:
            roof = [min(bw * x, peak) if peak else bw * x for x in grid]
            ax.plot(grid, roof, color="#333", linestyle="--", linewidth=1,
                    label=F.text(f"{c['device']} bandwidth {bw:.3g} GB/s "
                                 f"({c['bandwidth_source']})"))
    markers = {fw: SPECS[fw].marker for fw in FRAMEWORKS}
    seen = set()
    for p in pts:
        key = (p["framework"], p["mode"])
        ax.scatter([p["intensity"]], [p["gflops"]], color=F.color(*key), s=30, alpha=0.85,
                   marker=markers.get(p["framework"], "^"),
                   edgecolors="black" if p["jit"] else "none", linewidths=0.6,
                   label=None if key in seen else F.text(f"{key[0]} {key[1]}"))
        seen.add(key)
    F.log_scale(ax, "x")
    F.log_scale(ax, "y")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte accessed, XLA's count; log)")
    ax.set_ylabel("achieved GFLOP/s (formula FLOPs / median; log)")
    doubt = " — XLA's FLOPs are off the formula's: intensity doubtful" if any(
        p["doubtful"] for p in pts) else ""
    F.title(ax, F.text(f"{name}: roofline (outlined: JIT on){doubt}"), fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return F.to_data_uri(fig)


def _points(run):
    df = run.df[run.df["status"] == "ok"]
    if df.empty:
        return {}
    roof = roofline(df, run.calibration)
    out: dict[str, list[dict[str, Any]]] = {}
    for r, q in zip(df.to_dict("records"), roof.to_dict("records")):
        if isnan(q["intensity"]) or isnan(q["gflops"]):
            continue
        out.setdefault(r["workload"], []).append(
            {"framework": r["framework"], "mode": r["mode"], "jit": bool(r["jit"]),
             "intensity": q["intensity"], "gflops": q["gflops"],
             "doubtful": bool(q["intensity_doubtful"])})
    return out


def _figures(run) -> dict[str, Job]:
    ceil = records(ceilings(run.calibration))
    pts = _points(run)
    return {("roof", name): Job(draw_roofline, (name, p, ceil), weight=len(p) / 20)
            for name, p in sorted(pts.items())[:MAX_WORKLOADS]}


def _link(run, rel: str) -> str:
    """A run-relative file as the page links it: relative to the report's folder."""
    run_dir, report_dir = run.meta.get("run_dir"), run.meta.get("report_dir")
    if not run_dir:
        return rel
    path = Path(run_dir) / rel
    return os.path.relpath(path, report_dir) if report_dir else str(path.resolve())


def _files(run, names, keep) -> list[dict[str, str]]:
    if not isinstance(names, (list, tuple)):
        return []
    return [{"href": _link(run, f), "text": keep(f)} for f in names if keep(f)]


def _kind(f: str) -> str | None:
    for end, text in ((".txt", "HLO"), (".svg", "svg"), (".dot", "dot"),
                      (".xplane.pb", "xplane"), ("perfetto_trace.json.gz", "perfetto"),
                      ("trace.json.gz", "trace")):
        if f.endswith(end):
            return text
    return None


def _built(run) -> list[dict[str, Any]]:
    df = run.df
    roof = roofline(df, run.calibration)
    out = []
    for r, q in zip(df.to_dict("records"), roof.to_dict("records")):
        if not (r.get("jit") or text_or(r.get("hlo_note"))
                or isinstance(r.get("profile_files"), list)):
            continue  # a row from before these fields existed
        ratio = r.get("xla_flops_ratio")
        out.append({
            "case": f"{r['workload']} · {r['variant']} · {r['size']} · {r['dtype']} · "
                    f"{r['device']}", "framework": r["framework"], "mode": r["mode"],
            "jit": bool(r.get("jit")),
            "programs": fmt.num(r.get("hlo_programs"), ".0f"),
            "kernels": fmt.num(r.get("hlo_kernels"), ".0f"),
            "fusions": fmt.num(r.get("hlo_fusions"), ".0f"),
            "fused": {True: "yes", False: "no"}.get(r.get("hlo_elementwise_fused"), fmt.DASH),
            "fingerprint": text_or(r.get("hlo_fingerprint"), fmt.DASH),
            "formula": fmt.flop(r.get("flops")), "xla_flops": fmt.flop(r.get("xla_flops")),
            "ratio": fmt.times(ratio), "mismatch": bool(r.get("xla_flops_mismatch") is True),
            "intensity": fmt.num(q["intensity"], ".3g"), "bound": q["bound"],
            "bound_pct": fmt.pct(q["fraction_of_bound"]),
            "note": text_or(r.get("hlo_note")) or text_or(r.get("cost_note")),
            "hlo": _files(run, r.get("hlo_files"), _kind),
            "profile": _files(run, r.get("profile_files"), _kind),
        })
    return out


def _data(run, images) -> dict[str, Any]:
    ceil = ceilings(run.calibration)
    checks = flops_check(run.df)
    figs = [{"name": name, "img": img} for (kind, name), img in sorted(images.items(),
                                                                       key=str) if img]
    return {"figures": figs, "ceilings": records(ceil), "built": _built(run),
            "n_mismatch": int(checks["mismatch"].sum()) if len(checks) else 0,
            "n_checked": len(checks),
            "has_bandwidth": bool(len(ceil)) and not all(
                isinstance(v, float) and math.isnan(v) for v in ceil["bandwidth_gbps"])}


register(Section(name="roofline", title="Inside the compiled program", order=22, data=_data,
                 figures=_figures))
