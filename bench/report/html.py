"""Render a run (or a pytest-benchmark JSON) into reports/<run_id>/index.html.

``build_context`` turns the analysis DataFrames into plain values for the template; the
template (jinja2, autoescaped) only lays them out. Nothing from a run is ever marked safe:
error messages carry <, >, & and quotes and are shown as text.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

from .. import analysis
from ..errors import UserError
from ..modes import FRAMEWORKS, MODES, modes_for, nearest_baseline
from ..results import load_meta, load_results
from . import figures, fmt

_NEAREST = {fw: nearest_baseline(fw) for fw in FRAMEWORKS}
DEFAULT_MIN_TIME = 0.5  # `jitbench run --min-time` default: not repeated in commands


def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bench.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined)
    env.filters.update(secs=fmt.secs, num=fmt.num, times=fmt.times, calls=fmt.calls,
                       pct=fmt.pct, interval=fmt.interval, flop=fmt.flop,
                       signed_pct=fmt.signed_pct)
    return env


def _isnan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _records(frame) -> list[dict[str, Any]]:
    """Rows as dicts with None for missing values (pandas gives NaN, which is truthy)."""
    return [{k: None if _isnan(v) else v for k, v in r.items()}
            for r in frame.to_dict("records")]


def _mode_rank(framework: str, mode: str) -> tuple:
    order = modes_for(framework) if framework in ("tf", "jax") else []
    return (MODES[(framework, mode)].jit if (framework, mode) in MODES else True,
            order.index(mode) if mode in order else 99, mode)


def reproduce_command(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The `jitbench run` line that measures this case again, with the modes it was measured
    with (so speedups can be recomputed). It runs every size of the row's size set: the CLI
    selects sizes by set."""
    r = rows[0]
    modes = sorted({x["mode"] for x in rows}, key=lambda m: _mode_rank(r["framework"], m))
    source = str(r.get("source") or "")
    parts = ["jitbench", "run"]
    if source.endswith(".py"):
        parts += ["--suite-file", source]
    parts += ["--suite", str(r["workload"]), "--variant", str(r["variant"]),
              "--dtype", str(r["dtype"]), "--framework", str(r["framework"]),
              "--mode", ",".join(map(str, modes)), "--device", str(r["device"]),
              "--size", str(r.get("size_set") or "quick")]
    min_time = (meta.get("protocol") or {}).get("min_time")
    if min_time and min_time != DEFAULT_MIN_TIME:
        parts += ["--min-time", f"{min_time:g}"]
    return " ".join(shlex.quote(p) for p in parts)


def _with_work(frame, order):
    if frame.empty:
        frame = frame.copy()
        frame["work"] = []
        return frame
    out = frame.merge(order[["workload", "variant", "size", "work"]],
                      on=["workload", "variant", "size"], how="left")
    out.index = frame.index
    return out


def _descriptions(df) -> dict[str, str]:
    from ..workload import load_workload

    out = {}
    for name, source in df[["workload", "source"]].drop_duplicates().itertuples(index=False):
        if name in out or not isinstance(source, str) or not source:
            continue
        try:
            out[name] = load_workload(source).description
        except (ImportError, UserError, OSError):  # report made where the suite is absent
            out[name] = ""
    return out


def _speedup_cells(sp_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells = []
    for s in sorted(sp_rows, key=lambda s: (not s["nearest"], s["baseline"])):
        cells.append({
            "baseline": s["baseline"], "text": fmt.times(s["speedup"]),
            "ci": fmt.interval(s["ci_low"], s["ci_high"]), "verdict": s["verdict"],
            "css": {"faster": "faster", "slower": "slower"}.get(s["verdict"], "same"),
            "nearest": s["nearest"], "interleaved": s["interleaved"],
            "break_even": (fmt.calls(s["break_even_calls"])
                           if not _isnan(s["break_even_calls"]) else "unclear"),
        })
    return cells


def _mode_row(r: dict[str, Any], sp_rows: list[dict[str, Any]]) -> dict[str, Any]:
    counters = r.get("first_compile_s")
    share = r.get("floor_share")
    return {
        "mode": r["mode"], "jit": bool(r.get("jit")), "status": r["status"],
        "expected_failure": r.get("expected_failure") if isinstance(
            r.get("expected_failure"), str) else None,
        "median": fmt.secs(r.get("median_s")), "iqr": fmt.secs(r.get("iqr_s")),
        "n_samples": fmt.num(r.get("n_samples"), ".0f"),
        "first_call": fmt.secs(r.get("first_call_s")),
        "compile_cost": fmt.secs(r.get("compile_cost_s")),
        "xla_compile": fmt.secs(counters) if not _isnan(counters) and counters else None,
        "speedups": _speedup_cells(sp_rows),
        "gflops": fmt.num(r.get("gflops"), ".3g"),
        "peak_pct": fmt.pct(r.get("fraction_of_peak")),
        "rel_err": fmt.num(r.get("max_rel_err"), ".2g"),
        "rtol": fmt.num(r.get("rtol"), "g"),
        "noise": r.get("noise"), "noise_reason": r.get("noise_reason") or "",
        "dispatch_bound": bool(r.get("dispatch_bound")),
        "floor": fmt.secs(r.get("dispatch_floor_s")), "floor_share": fmt.pct(share),
        "note": r.get("note") if isinstance(r.get("note"), str) else None,
    }


def _findings(sp, gm, cross, facts, summ) -> list[str]:
    """A few plain sentences a reader gets in a minute; every number is in the tables."""
    out = []
    for g in gm[gm["nearest"]].to_dict("records"):
        out.append(f"{g['framework']} {g['mode']} vs {g['baseline']} on {g['device']}: "
                   f"geomean {fmt.times(g['geomean'])} over {g['n_included']} cases "
                   f"({g['n_faster']} faster, {g['n_slower']} slower, {g['n_same']} no "
                   f"significant difference; {g['n_excluded']} excluded).")
    near = sp[sp["nearest"]]
    sig = near[near["significant"]]
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
    for c in cross[cross["crossover"] & cross["baseline"].eq(
            cross["framework"].map(_NEAREST))].to_dict("records"):
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
    for g in gm[gm["nearest"]].to_dict("records"):
        kind = "good" if g["geomean"] > 1 else "bad" if g["geomean"] < 1 else ""
        tiles.append({"value": fmt.times(g["geomean"]),
                      "label": f"{g['framework']} {g['mode']} vs {g['baseline']} · "
                               f"{g['device']}",
                      "detail": f"geomean speedup over {g['n_included']} cases "
                                f"({g['n_faster']} faster, {g['n_slower']} slower, "
                                f"{g['n_same']} n.s.); {g['n_excluded']} excluded"
                                + (f", {g['n_skipped']} skipped" if g["n_skipped"] else ""),
                      "kind": kind})
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
                                f" measured at the start of this run", "kind": ""})
    ok = floors[floors["status"].isin(["ok", "derived"])]
    if len(ok):
        tiles.append({"value": " · ".join(f"{r['framework']} {r['mode']} {fmt.secs(r['floor_s'])}"
                                          for r in ok.to_dict("records")),
                      "label": "dispatch floor per mode (no-op call)",
                      "detail": "results near these times measure per-call overhead",
                      "kind": "wide"})
    return tiles


def _environment(meta: dict[str, Any]) -> list[tuple[str, str]]:
    m = meta.get("machine") or {}
    env: list[tuple[str, str]] = []
    if m:
        cores = f"{m.get('cpu_count', '–')} cores"
        if m.get("cpu_affinity") and m.get("cpu_affinity") != m.get("cpu_count"):
            cores += f" ({m['cpu_affinity']} usable)"
        env.append(("machine", (f"{m.get('cpu_model', '–')}, {cores}, "
                                f"{m.get('memory_gb', '–')} GB RAM; {m.get('platform', '')}; "
                                f"host {m.get('hostname', '–')}")))
        env.append(("python", str(m.get("python", "–"))))
        for g in m.get("gpus") or []:
            env.append(("GPU", ", ".join(f"{k} {v}" for k, v in g.items())))
    devices = meta.get("devices") or []
    if devices:
        env.append(("devices", ", ".join(
            f"{d.get('framework')}: {d.get('name')}" + (f" ({d['kind']})" if d.get("kind")
                                                         else "") for d in devices)))
    if meta.get("frameworks"):
        env.append(("versions", ", ".join(f"{k} {v}" for k, v in meta["frameworks"].items())))
    flags = meta.get("env") or {}
    env.append(("flags (environment)", ", ".join(f"{k}={v}" for k, v in flags.items())
                or "none set"))
    env.append(("auto-clustering flags", "TF_XLA_FLAGS set in its own worker: "
                + str(MODES[("tf", "autoclustering")].env.get("TF_XLA_FLAGS", ""))))
    env.append(("git commit", str(meta.get("git_commit") or "–")))
    env.append(("command", " ".join(shlex.quote(str(c)) for c in meta.get("command") or [])
                or "–"))
    env.append(("run", f"{meta.get('run_id', '–')}: started {meta.get('started_at') or '–'}, "
                       f"finished {meta.get('finished_at') or '–'} "
                       f"({meta.get('status') or '–'}"
                + (f", {meta['elapsed_s']:.0f} s" if isinstance(meta.get("elapsed_s"),
                                                               (int, float)) else "") + ")"))
    proto = meta.get("protocol") or {}
    if proto:
        env.append(("protocol", ", ".join(f"{k}={v}" for k, v in proto.items())))
    return env


def build_context(df, meta: dict[str, Any], *, n_boot: int = analysis.N_BOOT) -> dict:
    cal = meta.get("calibration")
    order = analysis.size_order(df)
    facts = _with_work(analysis.row_facts(df, cal), order)
    sp = _with_work(analysis.speedups(df, n_boot=n_boot), order)
    gm = analysis.geomean_speedups(sp, df)
    cross = analysis.crossovers(sp, order)
    summ = analysis.summary(df, sp)
    peak_rows, floors = analysis.calibration_frames(cal)
    peaks = analysis.peak_gflops(cal)
    curves = analysis.amortized_curves(df, sp)
    descriptions = _descriptions(df)

    workloads = []
    for name, rows in facts.groupby("workload", sort=True):
        wsp = sp[sp["workload"] == name]
        wcross = cross[cross["workload"] == name]
        cases = []
        case_keys = ["variant", "dtype", "work", "size", "framework", "device"]
        for keys, g in rows.groupby(case_keys, sort=True, dropna=False):
            variant, dtype, _, size, framework, device = keys
            recs = sorted(g.to_dict("records"),
                          key=lambda r: _mode_rank(r["framework"], r["mode"]))
            csp = wsp[(wsp["variant"] == variant) & (wsp["dtype"] == dtype)
                      & (wsp["size"] == size) & (wsp["framework"] == framework)
                      & (wsp["device"] == device)].to_dict("records")
            skipped = all(r["status"] == "skipped" for r in recs)
            cases.append({
                "label": f"{variant} · {dtype} · {size} · {framework} · {device}",
                "work": fmt.flop(keys[2]),
                "skipped": (recs[0].get("error") or "skipped") if skipped else None,
                "command": reproduce_command(recs, meta),
                "rows": [_mode_row(r, [s for s in csp if s["mode"] == r["mode"]])
                         for r in recs],
            })
        wcurves = curves[curves["workload"] == name]
        near_cross = wcross[wcross["baseline"].eq(wcross["framework"].map(
            _NEAREST))]
        charts = [
            ("speedup vs size", figures.speedup_vs_size(wsp, wcross)),
            ("scaling with size", figures.scaling(rows, near_cross, floors)),
            ("time distribution per mode", figures.time_distributions(rows)),
            ("compile cost vs steady-state time", figures.compile_vs_steady(rows)),
            ("amortized cost and break-even", figures.amortized(wcurves, wsp)),
        ]
        workloads.append({
            "name": name, "description": descriptions.get(name, ""), "cases": cases,
            "n_rows": len(rows), "n_ok": int((rows["status"] == "ok").sum()),
            "crossovers": [{
                "series": f"{c['variant']} {c['dtype']} {c['framework']} {c['device']} "
                          f"{c['mode']} vs {c['baseline']}",
                "summary": c["summary"], "crossover": bool(c["crossover"])}
                for c in wcross.to_dict("records")],
            "charts": [{"title": t, "img": img} for t, img in charts if img],
        })

    failures = []
    for r in df[df["status"] != "ok"].sort_values(["status", "case_id"]).to_dict("records"):
        failures.append({"case_id": r["case_id"], "status": r["status"],
                         "error_type": r.get("error_type") if isinstance(r.get("error_type"),
                                                                           str) else "",
                         "error": r.get("error") if isinstance(r.get("error"), str) else "",
                         "phase": r.get("error_phase") if isinstance(r.get("error_phase"),
                                                                     str) else "",
                         "expected": r.get("expected_failure") if isinstance(
                             r.get("expected_failure"), str) else ""})

    geomeans = [dict(g, geomean_text=fmt.times(g["geomean"]),
                     range_text=(f"{fmt.times(g['min_speedup'])} – {fmt.times(g['max_speedup'])}"
                                 if g["n_included"] else "–"))
                for g in gm.to_dict("records")]
    return {
        "n_failures": sum(f["status"] != "skipped" for f in failures),
        "n_skips": sum(f["status"] == "skipped" for f in failures),
        "meta": meta, "meta_json": json.dumps(meta, indent=2, default=str),
        "run_id": str(meta.get("run_id", "")),
        "summary": summ, "tiles": _tiles(gm, summ, peaks, floors),
        "findings": _findings(sp, gm, cross, facts, summ),
        "geomeans": geomeans,
        "overview": figures.overview_speedups(sp[sp["nearest"]]),
        "workloads": workloads, "failures": failures,
        "environment": _environment(meta),
        "calibration": {
            "present": bool(cal), "elapsed_s": (cal or {}).get("elapsed_s"),
            "peaks": _records(peak_rows), "floors": _records(floors),
        },
        "noise_floor_pct": f"{100 * analysis.NOISE_FLOOR:g}",
        "nearest": ", ".join(f"{k}: {v}" for k, v in _NEAREST.items()),
    }


def render(df, meta: dict[str, Any], **kw) -> str:
    return _env().get_template("report.html.j2").render(**build_context(df, meta, **kw))


def write_report(source: Path | str, out_dir: Path | str) -> Path:
    """Write index.html for a run folder (or results file); return its path."""
    source, out_dir = Path(source), Path(out_dir)
    df = load_results(source)
    if df.empty:
        raise UserError(f"{str(source)!r} holds no result rows")
    meta = load_meta(source) if source.is_dir() else {"run_id": source.stem}
    html = render(df, meta)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        page = out_dir / "index.html"
        page.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write the report to {str(out_dir)!r}: {exc.strerror}") from exc
    return page
