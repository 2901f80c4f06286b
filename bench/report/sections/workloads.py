"""One section per workload: its crossovers, five figures, and every mode of every case with
the command that measures it again."""

from __future__ import annotations

import functools
import shlex
from typing import Any

from jitbench import analysis
from jitbench.define.modes import FRAMEWORKS, MODES, modes_for
from jitbench.errors import UserError
from jitbench.report import fmt
from jitbench.report.draw import Deferred, Job
from jitbench.report.facts import isnan, nearest_only, text_or
from jitbench.report.sections import Section, register
from jitbench.report.sections import workload_figures as W

DEFAULT_MIN_TIME = 0.5  # `jitbench run --min-time` default: not repeated in commands

# (title, figure function) per workload, in page order
CHARTS = [("speedup vs size", W.speedup_vs_size), ("scaling with size", W.scaling),
          ("time distribution per mode", W.time_distributions),
          ("compile cost vs steady-state time", W.compile_vs_steady),
          ("amortized cost and break-even", W.amortized)]


def _mode_rank(framework: str, mode: str) -> tuple:
    order = modes_for(framework) if framework in FRAMEWORKS else []
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
    parts += run_options(meta)
    return " ".join(shlex.quote(p) for p in parts)


def run_options(meta: dict[str, Any]) -> list[str]:
    """The options of ``jitbench run`` that a run's meta.json records away from their defaults
    (the protocol's stopping rule, the workers' profile, the matmul precision)."""
    from jitbench.protocol.settings import Protocol

    default = Protocol()
    protocol = meta.get("protocol") if isinstance(meta.get("protocol"), dict) else {}
    out: list[str] = []
    precision = protocol.get("precision", default.precision)
    if precision is None:
        out += ["--precision", "off"]
        min_time = protocol.get("min_time")
        if min_time and min_time != DEFAULT_MIN_TIME:
            out += ["--min-time", f"{min_time:g}"]
    elif precision != default.precision:
        out += ["--precision", f"{precision:g}"]
    budget = protocol.get("budget", default.budget)
    if precision is not None and budget != default.budget:
        out += ["--budget", f"{budget:g}"]
    stop_when = protocol.get("stop_when", default.stop_when)
    if precision is not None and stop_when != default.stop_when:
        out += ["--stop-when", str(stop_when)]
    for key, flag in (("process_profile", "--process-profile"),
                      ("matmul_precision", "--matmul-precision")):
        value = meta.get(key)
        if isinstance(value, str) and value not in ("default", ""):
            out += [flag, value]
    return out


def _descriptions(df) -> dict[str, tuple[str, str]]:
    """workload -> (description, what one call is: "step" for a training step, else
    "call"), from its suite file where it is still there."""
    from jitbench.define.workload import load_workload

    out = {}
    if "workload" not in df or "source" not in df:  # rows edited by hand may lack either
        return out
    for name, source in df[["workload", "source"]].drop_duplicates().itertuples(index=False):
        if name in out or not isinstance(source, str) or not source:
            continue
        try:
            wl = load_workload(source)
            out[name] = (wl.description, "step" if wl.stateful else "call")
        except (ImportError, UserError, OSError):  # report made where the suite is absent
            out[name] = ("", "call")
    return out


def _per_variant(wsp, unit: str) -> dict[str, Any] | None:
    """The nearest pairs of a workload with several variants, one row per (size, variant):
    each JIT mode's speedup and verdict, its {unit}s per second, compile cost and
    break-even, so the variants (an optimizer, a batch-norm mode) read side by side."""
    recs = [r for r in wsp.to_dict("records") if r.get("nearest")]
    if len({r["variant"] for r in recs}) < 2:
        return None
    columns = sorted({(r["framework"], r["mode"]) for r in recs},
                     key=lambda fm: (fm[0], _mode_rank(*fm)))
    rows: dict[tuple, dict] = {}
    for r in recs:
        key = (str(r["size"]), str(r["variant"]), str(r["dtype"]), str(r["device"]))
        per_s = 1.0 / r["jit_median_s"] if r.get("jit_median_s") else float("nan")
        rows.setdefault(key, {})[(r["framework"], r["mode"])] = {
            "text": fmt.times(r["speedup"]), "verdict": r.get("verdict") or "",
            "css": {"faster": "faster", "slower": "slower"}.get(r.get("verdict"), "same"),
            "rate": fmt.num(per_s, ".3g"), "compile": fmt.secs(r.get("compile_cost_s")),
            "break_even": (fmt.calls(r["break_even_calls"])
                           if not isnan(r.get("break_even_calls")) else "unclear")}
    return {"unit": unit,
            "columns": [{"label": f"{fw} {m} vs {MODES[(fw, m)].baseline or 'JIT off'}"
                         if (fw, m) in MODES else f"{fw} {m}"} for fw, m in columns],
            "rows": [{"label": " · ".join(k), "cells": [cells.get(c) for c in columns]}
                     for k, cells in sorted(rows.items())]}


def _speedup_cells(sp_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells = []
    for s in sorted(sp_rows, key=lambda s: (not s["nearest"], s["baseline"])):
        cells.append({
            "baseline": s["baseline"], "text": fmt.times(s["speedup"]),
            "ci": fmt.interval(s["ci_low"], s["ci_high"]), "verdict": s["verdict"],
            "css": {"faster": "faster", "slower": "slower"}.get(s["verdict"], "same"),
            "nearest": s["nearest"], "interleaved": s["interleaved"],
            "break_even": (fmt.calls(s["break_even_calls"])
                           if not isnan(s["break_even_calls"]) else "unclear"),
        })
    return cells


GAP = 1.5  # synced and pipelined speedups this far apart: the case is marked


def latency_gap(ratio) -> str | None:
    """The mark of a JIT row whose synced speedup is ``ratio`` times its pipelined one, where
    they differ by more than :data:`GAP` either way."""
    if isnan(ratio) or not ratio or ratio <= 0:
        return None
    if ratio < 1 / GAP:
        return (f"synced {fmt.times(1 / ratio)} below pipelined: dispatch-bound, here JIT "
                f"saves host time that a caller waiting for each result still pays")
    if ratio > GAP:
        return f"synced {fmt.times(ratio)} above pipelined"
    return None


def _mode_row(r: dict[str, Any], sp_rows: list[dict[str, Any]]) -> dict[str, Any]:
    counters = r.get("first_compile_s")
    share = r.get("floor_share")
    return {
        "case_id": r["case_id"], "mode": r["mode"], "jit": bool(r.get("jit")),
        "status": r["status"],
        "expected_failure": r.get("expected_failure") if isinstance(
            r.get("expected_failure"), str) else None,
        "median": fmt.secs(r.get("median_s")), "iqr": fmt.secs(r.get("iqr_s")),
        "n_samples": fmt.num(r.get("n_samples"), ".0f"),
        "first_call": fmt.secs(r.get("first_call_s")),
        "compile_cost": fmt.secs(r.get("compile_cost_s")),
        "xla_compile": fmt.secs(counters) if not isnan(counters) and counters else None,
        "speedups": _speedup_cells(sp_rows),
        "gflops": fmt.num(r.get("gflops"), ".3g"),
        "peak_pct": fmt.pct(r.get("fraction_of_peak")),
        "bound_pct": fmt.pct(r.get("fraction_of_bound")),  # jitbench.analysis.roofline
        "synced": fmt.secs(r.get("synced_median_s")) if not isnan(r.get("synced_median_s"))
        else None,
        "synced_speedup": (f"{fmt.times(r['synced_speedup'])} "
                           f"{fmt.interval(r.get('synced_ci_low'), r.get('synced_ci_high'))}"
                           if not isnan(r.get("synced_speedup")) else None),
        "synced_gap": latency_gap(r.get("synced_vs_pipelined")),
        "precision": text_or(r.get("matmul_precision")),
        "rel_err": fmt.num(r.get("max_rel_err"), ".2g"),
        "rtol": fmt.num(r.get("rtol"), "g"),
        "noise": r.get("noise"), "noise_reason": r.get("noise_reason") or "",
        "dispatch_bound": bool(r.get("dispatch_bound")),
        "floor": fmt.secs(r.get("dispatch_floor_s")), "floor_share": fmt.pct(share),
        "note": r.get("note") if isinstance(r.get("note"), str) else None,
    }


def _by_workload(run):
    for name, rows in run.rows.groupby("workload", sort=True):
        yield (name, rows, run.sp[run.sp["workload"] == name],
               run.cross[run.cross["workload"] == name])


def _figures(run) -> dict[str, Job | Deferred]:
    jobs: dict[str, Job | Deferred] = {}
    for name, rows in run.rows.groupby("workload", sort=True):
        for i, (_, fn) in enumerate(CHARTS):
            # amortized and time distributions draw a panel per case, the others fewer
            weight = len(rows) / (1 if fn in (W.amortized, W.time_distributions) else 3)
            if fn in (W.time_distributions, W.compile_vs_steady):  # the rows alone
                jobs[f"{name}/{i}"] = Job(fn, (rows,), weight=weight)
            else:  # the speedups too: drawn once their bootstrap is done
                jobs[f"{name}/{i}"] = Deferred(functools.partial(
                    _speedup_job, run, name, rows, fn, weight))
    return jobs


def _speedup_job(run, name, rows, fn, weight) -> Job:
    wsp, wcross = run.sp[run.sp["workload"] == name], run.cross[run.cross["workload"] == name]
    args = {W.speedup_vs_size: (wsp, wcross),
            W.scaling: (rows, nearest_only(wcross), run.floors),
            W.amortized: (run.curves[run.curves["workload"] == name], wsp)}
    return Job(fn, args[fn], weight=weight)


_CASE = ["variant", "dtype", "work", "size", "framework", "device"]


def _case_order(keys: tuple) -> tuple:
    """Cases in the order of their keys, work per call numerically, a missing work last."""
    return tuple((1, 0.0) if isnan(k) else (0, k) for k in keys)


def _data(run, images) -> dict[str, Any]:
    descriptions = _descriptions(run.df)
    workloads = []
    for name, rows, wsp, wcross in _by_workload(run):
        cases = []
        # not a pandas groupby and a mask per case, each made records: half the page's time
        by_case = analysis.group_records(rows.to_dict("records"), _CASE)
        sp_by_case = analysis.group_records(wsp.to_dict("records"),
                                            [k for k in _CASE if k != "work"])
        for keys in sorted(by_case, key=_case_order):
            variant, dtype, _, size, framework, device = keys
            recs = sorted(by_case[keys], key=lambda r: _mode_rank(r["framework"], r["mode"]))
            csp = sp_by_case.get((variant, dtype, size, framework, device), [])
            skipped = all(r["status"] == "skipped" for r in recs)
            cases.append({
                "label": f"{variant} · {dtype} · {size} · {framework} · {device}",
                "work": fmt.flop(keys[2]),
                "skipped": (recs[0].get("error") or "skipped") if skipped else None,
                "case_ids": [r["case_id"] for r in recs],
                "command": reproduce_command(recs, run.meta),
                "rows": [_mode_row(r, [s for s in csp if s["mode"] == r["mode"]])
                         for r in recs],
            })
        charts = [(title, images.get(f"{name}/{i}")) for i, (title, _) in enumerate(CHARTS)]
        workloads.append({
            "name": name, "description": descriptions.get(name, ("", ""))[0], "cases": cases,
            "per_variant": _per_variant(wsp, descriptions.get(name, ("", "call"))[1]),
            "n_rows": len(rows), "n_ok": int((rows["status"] == "ok").sum()),
            "crossovers": [{
                "series": f"{c['variant']} {c['dtype']} {c['framework']} {c['device']} "
                          f"{c['mode']} vs {c['baseline']}",
                "summary": c["summary"], "crossover": bool(c["crossover"])}
                for c in wcross.to_dict("records")],
            "charts": [{"title": t, "img": img} for t, img in charts if img],
        })
    return {"workloads": workloads}


register(Section(name="workloads", title="Workloads", order=20, data=_data, figures=_figures,
                 nav=lambda d: [(w["name"], w["name"]) for w in d["workloads"]]))
