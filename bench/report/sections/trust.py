"""How much to trust this run, first thing on the page: the A/A controls (identical programs
measured the way real pairs are), the scatter they add to every interval, rows where JIT compiled
nothing, modes that interleaving moved (the interference check), and what process start-up
cost before any case (the warm-up, kept out of the rows)."""

from __future__ import annotations

import math
from typing import Any

from jitbench import analysis
from jitbench.report import fmt
from jitbench.report.sections import Section, register


def _controls(run) -> list[dict[str, Any]]:
    """Each group's A/A control (the details under the headline's bands)."""
    controls = run.controls
    if controls is None or controls.empty:
        return []
    return [{"what": f"{c['framework']} {c['mode']} vs itself · {c['device']}",
             "case": f"{c['workload']} {c['variant']} {c['dtype']} {c['size']}",
             "pairing": c["pairing"], "significant": c["significant"],
             "text": (f"{c['verdict']} {fmt.times(c['ratio'])} "
                      f"{fmt.interval(c['ci_low'], c['ci_high'])}"
                      if isinstance(c["verdict"], str) else f"not measured: {c['error']}")}
            for c in controls.to_dict("records")]


def verdict_text(counts: dict[str, int]) -> str:
    """'0 called faster or slower, 3 same, 16 unresolved' from ``{"n_faster": 0, ...}``."""
    wrong = counts.get("n_faster", 0) + counts.get("n_slower", 0)
    rest = [f"{counts[f'n_{v}']} {v}" for v in ("same", "unresolved") if counts.get(f"n_{v}")]
    return ", ".join([f"{wrong} called faster or slower", *rest])


def _bands(run) -> list[dict[str, Any]]:
    """The headline: where identical programs landed, per kind of control."""
    return [{"what": f"{b['framework']} {b['mode']} vs itself · {b['device']}",
             "text": f"{fmt.times(b['ratio'])} {fmt.interval(b['band_low'], b['band_high'])}",
             "n": int(b["n_controls"]), "n_significant": int(b["n_significant"]),
             "verdicts": verdict_text({f"n_{v}": int(b[f"n_{v}"])
                                       for v in analysis.AA_VERDICTS}),
             "pairing": b["pairing"]}
            for b in run.bands.to_dict("records")]


def _no_jit(run, no_jit) -> list[dict[str, Any]]:
    out = []
    for r in no_jit.to_dict("records"):
        inside = analysis.in_band(run.bands, r["framework"], r["device"], r["baseline"],
                                  r["speedup"])
        out.append({"case": f"{r['workload']} {r['variant']} {r['dtype']} {r['size']} "
                            f"{r['framework']} {r['mode']} vs {r['baseline']}",
                    "ratio": fmt.times(r["speedup"]),
                    "band": {True: "inside the A/A band", False: "OUTSIDE the A/A band",
                             None: ""}[inside], "outside": inside is False})
    return out


def _interference(df) -> list[dict[str, Any]]:
    if "interference_flag" not in df.columns:
        return []
    flagged = df[df["interference_flag"].eq(True)]
    return [{"case": f"{r['workload']} {r['variant']} {r['dtype']} {r['size']}",
             "mode": f"{r['framework']} {r['mode']}",
             "text": f"interleaved median {fmt.secs(r['median_s'])} vs alone "
                     f"{fmt.secs(r['alone_median_s'])}: {fmt.times(r['interference'])} once "
                     f"the drift all modes shared ({fmt.times(r.get('interference_shared'))}) "
                     f"is taken out, both blocks alone beyond the "
                     f"±{fmt.pct(r.get('interference_noise'))} its interleaved blocks wander"}
            for r in flagged.to_dict("records")]


def _startup(meta) -> list[dict[str, Any]]:
    out = []
    for w in meta.get("workers") or []:
        for mode, s in (w.get("startup") or {}).items():
            out.append({"worker": f"{w.get('framework')} pid {w.get('pid')}", "mode": mode,
                        "text": s.get("error") or fmt.secs(s.get("first_call_s"))})
    return out


def _scatter(run) -> str:
    """'±2.1% (tf cpu), ±7.1% (jax cpu)': the A/A scatter every interval now includes."""
    return ", ".join(f"±{fmt.pct(math.expm1(analysis.SCATTER_Z * s), 1)} ({fw} {dev})"
                     for (fw, dev), s in sorted(run.scatter.items()))


def _data(run, images) -> dict[str, Any]:
    sp = run.sp
    no_jit = sp[sp["verdict"] == analysis.NO_JIT]
    n_interleaved = int(run.df["alone_median_s"].notna().sum()) \
        if "alone_median_s" in run.df.columns else 0
    controls = run.controls
    n_sig = int(controls["significant"].sum()) if not controls.empty else 0
    sampled = sp[sp["interval_from"] != "blocks"] if "interval_from" in sp else sp
    widened = bool(len(sampled)) and bool(run.scatter)
    return {"controls": _controls(run), "bands": _bands(run),
            "scatter": _scatter(run) if widened else "", "n_widened": len(sampled),
            "n_controls": len(controls), "n_significant": n_sig,
            "no_jit": _no_jit(run, no_jit),
            "interference": _interference(run.df), "n_checked": n_interleaved,
            "startup": _startup(run.meta)}


register(Section(name="trust", title="How far to trust this run", order=12, data=_data,
                 nav=lambda d: [("trust", "Trust")]))
