"""``jitbench nightly --evaluate HISTORY``: how often each detector cries wolf on recorded
nights of unchanged code, and how soon it sees a step planted into them.

Replay: every series of the corpus (``jitbench.nightly.corpus``) is read night by night by each
detector (``jitbench.analysis.detectors``). *False alerts*: alerts on the nights as recorded (the
code did not change). *Detection*: a step of 5, 10, 20 and 30% is planted into one series at a
time (its ratio and interval multiplied by 1 + step from night k on), at several nights k; a
detection is an alert on night k or k+1 (within 2 nights), the delay is the first alert's
night minus k, *found* an alert within 10 nights (a step not reported by then has become part
of the detector's reference). The other series stay as recorded (a detector that corrects
across series sees them as they were).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from jitbench.analysis.detectors import (
    DETECTORS,
    PAIRED_FLOOR,
    PAIRED_WINDOW,
    Detector,
    baseline_moves,
    history_processes,
    jit_levels,
    judge_night,
    machine_levels,
    previous_index,
    processes_noise,
    reference_end,
    steady_nights,
)
from jitbench.analysis.history import benjamini_hochberg
from jitbench.errors import UserError
from jitbench.nightly import corpus as corpus_mod
from jitbench.nightly.runs import comparable, run_dirs
from jitbench.results.files import load_meta

STEPS = (0.05, 0.10, 0.20, 0.30)
SHIPPED = "paired"  # the detector the nightly uses, chosen by this evaluation (docs/nightly.md)
MIN_PREVIOUS = 5
EVERY = 3  # a step is planted at every third night (``positions``)
FOUND_WITHIN = 10  # "found": an alert within this many nights of the step's first


def load_history(path: Path | str) -> dict[str, Any]:
    """A corpus file, or a results root whose runs are made into one."""
    p = Path(path)
    if p.is_file():
        return corpus_mod.load(p)
    if not p.is_dir():
        raise UserError(f"--evaluate {str(path)!r}: no such corpus file or results folder")
    runs = [d for d in run_dirs(p) if load_meta(d).get("status") != "running"]  # finished
    if not runs:
        raise UserError(f"--evaluate {str(path)!r}: no runs in that folder")
    metas = {load_meta(d).get("run_id") or d.name: d for d in runs}
    keep = set(comparable({k: load_meta(d) for k, d in metas.items()}, list(metas)))
    return corpus_mod.from_runs([d for k, d in metas.items() if k in keep],
                                command=f"jitbench nightly --evaluate {path}")


def arrays(corpus: dict[str, Any]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(series ids, log ratio, log low, log high), each [series, nights], NaN where missing."""
    ids = list(corpus["series"])

    def logs(key):
        return np.array([[math.log(v) if isinstance(v, (int, float)) and v > 0 else np.nan
                          for v in corpus["series"][i][key]] for i in ids], float)

    n = len(corpus["nights"])
    if not ids:
        return ids, *(np.zeros((0, n)) for _ in range(3))
    return ids, logs("ratio"), logs("low"), logs("high")


def baseline_logs(corpus: dict[str, Any], key: str = "baseline_median_s") -> np.ndarray:
    """[series, nights]: the log of each series' JIT-off median (``key``: or its JIT mode's,
    ``median_s``), NaN where missing."""
    n = len(corpus["nights"])
    logs = [[math.log(v) if isinstance(v, (int, float)) and v > 0 else np.nan
             for v in (s.get(key) or [None] * n)]
            for s in corpus["series"].values()]
    return np.array(logs, float).reshape(len(logs), n)


def machine_steady(corpus: dict[str, Any]) -> np.ndarray:
    """Per night, whether the machine ran as usual (``detectors.steady_nights`` of the
    series' JIT-off medians), or the night has other framework versions than the night
    before (as ``jitbench.analysis.machine.machine_state`` decides)."""
    n = len(corpus["nights"])
    steady = steady_nights(machine_levels(baseline_logs(corpus)))
    versions = [json.dumps(night.get("versions"), sort_keys=True) for night in corpus["nights"]]
    return steady | np.array([t > 0 and versions[t] != versions[t - 1] for t in range(n)],
                             bool)


def process_counts(corpus: dict[str, Any]) -> np.ndarray:
    """[series, nights]: the fresh processes each night's point combines (1 where the corpus
    does not say: one a night)."""
    n = len(corpus["nights"])
    return np.array([[v if isinstance(v, int) and v > 0 else 1
                      for v in (s.get("processes") or [None] * n)]
                     for s in corpus["series"].values()], int).reshape(-1, n)


def process_floors(corpus: dict[str, Any]) -> np.ndarray:
    """Per series, the paired rule's sigma floor for nights of its median process count:
    ``PAIRED_FLOOR`` is one process's, k processes have ``processes_noise(k)`` of it."""
    counts = process_counts(corpus)
    return np.array([PAIRED_FLOOR * processes_noise(float(np.median(k))) for k in counts],
                    float)


def _judge(det: Detector, x, lo, hi, threshold, steady=None, start=0, floor=PAIRED_FLOOR,
           processes=None, base_move=None, alt=None):
    p, cand = det.judge(x, lo, hi, threshold=threshold, start=start,
                        **({"steady": steady} if det.machine_gate else {}),
                        **({"floor": floor, "processes": processes, "base_move": base_move,
                            "alt": alt} if det.name == "paired" else {}))
    seen_before = np.concatenate([[0], np.cumsum(~np.isnan(x))[:-1]])
    tested = ~np.isnan(x) & (seen_before >= MIN_PREVIOUS)
    return np.where(tested, p, np.nan), cand & tested


def _alerts(det: Detector, p_all: np.ndarray, cand: np.ndarray, s: int,
            p_series: np.ndarray) -> np.ndarray:
    """Alerts of series ``s`` per night, its p-values ``p_series`` beside the others'."""
    if not det.fdr:
        return cand & (np.nan_to_num(p_series, nan=1.0) < det.alpha)
    out = np.zeros(len(p_series), bool)
    for t in np.nonzero(cand)[0]:
        night = p_all[:, t].copy()
        night[s] = p_series[t]
        tested = ~np.isnan(night)
        rejected = np.array(benjamini_hochberg(list(night[tested]))) <= det.alpha
        out[t] = rejected[np.nonzero(np.nonzero(tested)[0] == s)[0][0]]
    return out


def positions(n: int) -> list[int]:
    """Nights a step is planted at: every ``EVERY``-th night from night ``2 * MIN_PREVIOUS``
    on (a history of 10 nights at least) to the second-last (a step needs a night after it
    to be confirmed): many positions, so that a few odd nights do not make the figures."""
    return list(range(2 * MIN_PREVIOUS, n - 1, EVERY))


def evaluate(corpus: dict[str, Any], detector: str, threshold: float = 0.10,
             steps: tuple[float, ...] = STEPS) -> dict[str, Any]:
    if detector not in DETECTORS:
        raise UserError(f"unknown detector {detector!r}; valid: {', '.join(DETECTORS)}")
    det = DETECTORS[detector]
    ids, x, lo, hi = arrays(corpus)
    n = x.shape[1]
    steady = machine_steady(corpus)
    floors, ks = process_floors(corpus), process_counts(corpus)
    base = baseline_logs(corpus)
    moves, alt = baseline_moves(base), jit_levels(baseline_logs(corpus, "median_s"), base)
    judged = [_judge(det, x[s], lo[s], hi[s], threshold, steady, floor=floors[s],
                     processes=ks[s], base_move=moves[s], alt=alt[s])
              for s in range(len(ids))]
    p_all = np.array([j[0] for j in judged]) if ids else np.zeros((0, n))
    false = []
    for s, (p, cand) in enumerate(judged):
        for t in np.nonzero(_alerts(det, p_all, cand, s, p))[0]:
            false.append({"series": ids[s], "night": corpus["nights"][t].get("run_id", t),
                          "ratio": float(math.exp(x[s, t]))})
    detection, delays, counts, found, per_series = {}, {}, {}, {}, {}
    where = positions(n)
    for step in steps:
        hits, delay, total, ever = 0, [], 0, 0
        per_series[f"{step:g}"] = by_series = {}
        for s in range(len(ids)):
            for k in where:
                if np.isnan(x[s, k]) or np.count_nonzero(~np.isnan(x[s, :k])) < MIN_PREVIOUS:
                    continue
                # the nights before k are as recorded; judging from k - 1 on (a suspect the
                # night before the step) gives the same alerts from k on as judging all
                stop = min(n, k + FOUND_WITHIN)
                shift = np.where(np.arange(stop) >= k, math.log1p(step), 0.0)
                p, cand = _judge(det, x[s, :stop] + shift, lo[s, :stop] + shift,
                                 hi[s, :stop] + shift, threshold, steady[:stop], start=k - 1,
                                 floor=floors[s], processes=ks[s, :stop],
                                 base_move=moves[s, :stop], alt=alt[s, :stop] + shift)
                alert = np.nonzero(_alerts(det, p_all[:, :stop], cand, s, p)[k:])[0]
                total += 1
                seen = by_series.setdefault(ids[s], [0, 0])
                seen[1] += 1
                if alert.size and alert[0] <= 1:
                    hits += 1
                    seen[0] += 1
                if alert.size:
                    delay.append(int(alert[0]))
                    ever += 1
        key = f"{step:g}"
        detection[key] = hits / total if total else None
        delays[key] = float(np.median(delay)) if delay else None
        found[key] = ever / total if total else None
        counts[key] = total
    series_nights = int(sum(np.count_nonzero(~np.isnan(p)) for p, _ in judged))
    visible = _visible(x, lo, hi, threshold, steady, floors, ks, alt)
    return {"detector": detector, "doc": det.doc, "nights": n, "series": len(ids),
            "series_nights_judged": series_nights, "false_alerts": len(false),
            "false_alert_list": false, "detection": detection, "delay_nights": delays,
            "found": found, "injections": counts,
            "by_visibility": by_visibility(ids, visible, per_series),
            "seeing": {f"{step:g}": (float(np.count_nonzero(visible <= step)) / len(ids)
                                     if ids else None) for step in steps},
            "positions": where, "threshold": threshold,
            "unsteady_nights": [corpus["nights"][t].get("run_id", t)
                                for t in np.nonzero(~steady)[0]],
            "host": corpus.get("host", {})}


def _visible(x, lo, hi, threshold, steady, floors=None, counts=None, alt=None) -> np.ndarray:
    """Per series, the smallest step the paired rule would see on its last judged night
    (``detectors.paired_night``'s ``visible``; NaN with too short a history)."""
    out = np.full(x.shape[0], np.nan)
    for s in range(x.shape[0]):
        nights = np.nonzero(~np.isnan(x[s]))[0]
        if not nights.size:
            continue
        t = int(nights[-1])
        where = previous_index(x[s], reference_end(t, steady), PAIRED_WINDOW)
        if where.size >= MIN_PREVIOUS:
            out[s] = judge_night(t, where, x[s], lo[s], hi[s],
                                 None if alt is None else alt[s], threshold,
                                 PAIRED_FLOOR if floors is None else floors[s],
                                 processes=1 if counts is None else int(counts[s, t]),
                                 history_processes=history_processes(
                                     None if counts is None else counts[s], where))["visible"]
    return out


def by_visibility(ids, visible, per_series) -> dict[str, Any]:
    """Detection split by what each series can see (its ``visible`` step on the last night):
    per planted step, how many series see a step of that size, and the share of their
    injections detected within 2 nights against the other series' share."""
    out = {}
    for step, got in per_series.items():
        sees = {ids[s] for s in np.nonzero(visible <= float(step))[0]}

        def rate(keep):
            hit = sum(h for i, (h, _) in got.items() if keep(i))
            total = sum(n for i, (_, n) in got.items() if keep(i))
            return hit / total if total else None

        out[step] = {"series": len(sees), "detection": rate(lambda i: i in sees),
                     "others": rate(lambda i: i not in sees)}
    return out


def evaluate_all(corpus: dict[str, Any], threshold: float = 0.10) -> dict[str, Any]:
    """The shipped detector's figures at the top level (the issue's JSON), every detector's
    under ``detectors``."""
    every = {name: evaluate(corpus, name, threshold) for name in DETECTORS}
    top = every[SHIPPED]
    return {"nights": top["nights"], "series": top["series"],
            "false_alerts": top["false_alerts"], "detection": top["detection"],
            "delay_nights": top["delay_nights"], "found": top["found"],
            "seeing": top["seeing"], "detector": SHIPPED,
            "host": top["host"], "detectors": every}


def table(result: dict[str, Any]) -> str:
    """The evaluation as text: one line per detector."""
    lines = [f"{result['nights']} nights x {result['series']} series "
             f"(host: {result['host'].get('node', '?')}, {result['host'].get('cpus', '?')} "
             f"cpus); steps planted every {EVERY} nights from night {2 * MIN_PREVIOUS} "
             f"({len(result['detectors'][SHIPPED]['positions'])} nights), "
             f"detected = an alert within 2 nights",
             f"{'detector':<10} {'false alerts':>13} " + " ".join(
                 f"{'det ' + k:>9}" for k in result["detection"])
             + "  median delay (nights)  found within 10"]
    for name, r in result["detectors"].items():
        det = " ".join(f"{100 * v:8.0f}%" if v is not None else f"{'-':>9}"
                       for v in r["detection"].values())
        delay = " / ".join("-" if v is None else f"{v:g}" for v in r["delay_nights"].values())
        found = " / ".join("-" if v is None else f"{100 * v:.0f}%" for v in r["found"].values())
        mark = " *" if name == SHIPPED else ""
        lines.append(f"{name + mark:<10} {r['false_alerts']:>5} of {r['series_nights_judged']:<5}"
                     f" {det}  {delay:<22} {found}")
    lines.append("* the nightly's detector")
    split = result["detectors"][SHIPPED].get("by_visibility") or {}
    if split:

        def pct(v):
            return "-" if v is None else f"{100 * v:.0f}%"

        lines.append(f"{SHIPPED}, by what a series sees (the smallest step its last night "
                     f"shows 95% of the time): " + "; ".join(
                         f"{100 * float(k):g}%: {v['series']} of {result['series']} series see "
                         f"it, detected {pct(v['detection'])} (others {pct(v['others'])})"
                         for k, v in split.items()))
    return "\n".join(lines)
