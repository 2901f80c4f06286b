"""A night's summary (``nightly-summary.json``, written through ``jitbench.results.files``):
each suspected or confirmed step with a sentence saying what moved, how far, when it began
and what else changed that night; the night's process profile; each detector replayed on the
history."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from jitbench.analysis.detectors import MACHINE_BOUND
from jitbench.analysis.history import METRICS, Thresholds, hlo_change
from jitbench.analysis.machine import machine_speed
from jitbench.nightly import change, evaluate
from jitbench.nightly import corpus as corpus_mod
from jitbench.nightly.past_nights import History
from jitbench.nightly.runs import run_dirs
from jitbench.results.files import NightSummary, load_meta


def record(r: dict[str, Any]) -> dict[str, Any]:
    """A test row for the summary, with a sentence saying what moved and how far."""
    out = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
    if r.get("reference") is not None:
        noise = "" if r["z"] is None else (f", noise {100 * r['noise']:.1f}%, z {r['z']:.1f}, "
                                           f"q {r['q_value']:.2g}")
        interval = (f" [{r['low']:.4g}-{r['high']:.4g}]" if isinstance(r.get("low"), float)
                    and isinstance(r.get("high"), float) and r["low"] == r["low"]
                    and r["high"] == r["high"] else "")
        out["text"] = (f"{METRICS[r['metric']].doc}: {r['reference']:.4g} -> {r['latest']:.4g}"
                       f"{interval} ({100 * r['change']:+.1f}%){noise}, {r['n_previous']} "
                       f"earlier runs")
        if r.get("quantity") == "jit_time":  # jitbench.analysis.detectors.judge_night
            out["text"] += ("; judged on the JIT mode's own time against the machine, the "
                            "quieter of its two series (its JIT-off baseline moves on its own)")
    return out


def summary(h: History, thresholds: Thresholds, suspects, confirmed,
            recheck: dict[str, Any] | None) -> NightSummary:
    def hlo(rec):  # did the compiled program change too? (jitbench.analysis.history.hlo_change)
        rec.update(hlo_change(h.df, h.judged, rec, thresholds.window))
        if rec["hlo_changed"] is not None and rec.get("text"):
            rec["text"] += ("; optimized HLO changed (fingerprint {hlo_reference_fingerprint} -> "
                            "{hlo_fingerprint})" if rec["hlo_changed"] else
                            "; optimized HLO unchanged ({hlo_fingerprint})").format(**rec)
        rec.update(_what_else(h, rec))
        if rec.get("text"):
            rec["text"] += (f"; began on {rec['began']}" + (
                f" or on {', '.join(h.waiting)} (not judged: the machine moved)"
                if h.waiting else "") + (
                f" (the night before: {rec['night_before']})" if rec["night_before"] else ""))
        if rec.get("text") and rec.get("also_changed"):
            rec["text"] += "; also changed that night: " + ", ".join(rec["also_changed"])
        if rec.get("text") and rec.get("ab_command"):
            rec["text"] += (f"; the software or the machine? measure both environments side "
                            f"by side: {rec['ab_command']}"
                            + (f" ({rec['ab_note']})" if rec.get("ab_note") else ""))
        return rec

    def records(t):
        return [] if t is None else [hlo(record(r))
                                     for r in t.loc[t["regression"]].to_dict("records")]

    tests = h.tests
    short = tests[tests["needs"] > 0]
    needs = int(short["needs"].max()) if len(short) else 0
    other = len(h.order) - len(h.judged)
    return {"latest_run": h.order[-1], "runs": h.order, "rechecked": recheck is not None,
            "n_other_protocol": other,
            "protocol_note": (f"{other} earlier runs were measured under another protocol "
                              f"and are not compared") if other else None,
            "thresholds": dataclasses.asdict(thresholds),
            "metrics": {m.name: m.doc for m in METRICS.values()},
            "n_tested": int((tests["needs"] == 0).sum()),
            "n_short_history": len(short),
            "note": (f"{len(short)} series x metrics need up to {needs} more runs before "
                     f"they can be judged") if needs else None,
            "suspected": records(suspects), "confirmed": records(confirmed),
            "advisory": [hlo(record(r)) for r in tests.loc[tests["advisory"]].to_dict("records")],
            "recheck": recheck, "regression": bool(len(records(confirmed))),
            "smaller_steps": [], "undecided": [], "undecided_note": None}


def _what_else(h: History, rec: dict[str, Any]) -> dict[str, Any]:
    """What an alert needs beside its step: the night it began (the night judged), the night
    before it, and what else changed between them: the series' compile count, the framework
    versions, the source file of its workload, the commit, the host, the GPUs (and whether
    tonight's GPU throttled)."""
    latest, before = h.order[-1], (h.judged[-2] if len(h.judged) > 1 else None)
    out: dict[str, Any] = {"began": latest, "night_before": before, "also_changed": []}
    if before is None:
        return out
    pts = h.points[(h.points["series"] == rec.get("series"))
                   & (h.points["metric"] == "compiles")]
    counts = {r: v for r, v in zip(pts["run_id"], pts["value"])}
    if before in counts and latest in counts and counts[before] != counts[latest]:
        out["also_changed"].append(f"compiles in the first call {counts[before]:g} -> "
                                   f"{counts[latest]:g}")
    new, old = h.metas.get(latest) or {}, h.metas.get(before) or {}
    out["also_changed"] += [c.text() for c in change.what_changed(old, new)
                            if c.kind in ("package", "python")]
    mine = rec.get("workload")
    was, now = ((m.get("workload_sources") or {}).get(mine) for m in (old, new))
    if was and now and was != now:
        out["also_changed"].append(f"the source of workload {mine} ({was} -> {now})")
    if old.get("git_commit") != new.get("git_commit"):
        out["also_changed"].append(f"commit {str(old.get('git_commit'))[:10]} -> "
                                   f"{str(new.get('git_commit'))[:10]}")
    for key in ("hostname", "cpu_model", "cpu_count"):
        a, b = (old.get("machine") or {}).get(key), (new.get("machine") or {}).get(key)
        if a != b:
            out["also_changed"].append(f"{key} {a} -> {b}")
    out["also_changed"] += _gpu_changes(old, new, h.df[h.df["run_id"] == latest])
    out.update(change.ab_command(old, new, rec))
    speed = machine_speed(h.df, before, latest)
    if speed is not None and abs(math.log(speed["factor"])) > math.log1p(MACHINE_BOUND):
        out["also_changed"].append(
            f"the machine: every JIT-off time x{speed['factor']:.2f} (median of "
            f"{speed['cases']} cases, 10-90%: x{speed['q10']:.2f}-x{speed['q90']:.2f})")
    return out


def _gpu_changes(old: dict[str, Any], new: dict[str, Any], rows) -> list[str]:
    """The GPU's side of what else changed: its model or driver between the two nights, and
    tonight's groups the GPU slowed down in (``gpu_throttled``)."""
    def gpus(meta):
        return [(g.get("name"), g.get("driver_version"))
                for g in (meta.get("machine") or {}).get("gpus") or []]

    out = []
    if gpus(old) != gpus(new):
        out.append(f"GPUs {gpus(old) or 'none'} -> {gpus(new) or 'none'}")
    if "gpu_throttled" in rows.columns:
        hot = rows[rows["gpu_throttled"].eq(True)]
        if len(hot):
            out.append(f"the GPU slowed down during {len(hot)} of tonight's rows "
                       f"({str(hot['gpu_throttle_note'].iloc[0])[:120]})")
    return out


def profile_facts(meta: dict[str, Any]) -> dict[str, Any]:
    """The night's process profile (``jitbench.run.options.PROCESS_PROFILES``) and, where it
    changes what is measured, a sentence saying so (the history page and the alerts show it)."""
    from jitbench.run.options import PROCESS_PROFILES

    name = meta.get("process_profile") or "default"
    note = None if name == "default" else (
        f"Measured in the {name!r} process profile ({PROCESS_PROFILES.get(name, name)}): a "
        f"step here is a change in the compiled code or the runtime, not the speedup a user's "
        f"multi-threaded process sees")
    return {"process_profile": name, "profile_note": note}


EVALUATED_NIGHTS = 30  # the detectors' window: enough to judge them, cheap enough nightly


def evaluation(results_root: Path, h: History, threshold: float) -> dict[str, Any] | None:
    """Each detector replayed on this history's last ``EVALUATED_NIGHTS`` comparable nights
    (``jitbench.nightly.evaluate``: false alerts, steps planted and found), for the history page
    and the summary; None before there is anything to judge."""
    if len(h.judged) <= evaluate.MIN_PREVIOUS:
        return None
    dirs = {load_meta(d).get("run_id") or d.name: d for d in run_dirs(results_root)}
    nights = [dirs[r] for r in h.judged[-EVALUATED_NIGHTS:] if r in dirs]
    every = evaluate.evaluate_all(corpus_mod.from_runs(nights), threshold)
    keep = ("doc", "false_alerts", "series_nights_judged", "detection", "delay_nights",
            "found", "by_visibility")
    return {"nights": every["nights"], "series": every["series"], "shipped": evaluate.SHIPPED,
            "positions": every["detectors"][evaluate.SHIPPED]["positions"],
            "detectors": {name: {k: r[k] for k in keep}
                          for name, r in every["detectors"].items()}}
