"""``jitbench nightly --evaluate HISTORY``: how often each detector cries wolf on recorded
nights of unchanged code, and how soon it sees a step planted into them.

Replay: every series of the corpus (``bench.nightly.corpus``) is read night by night by each
detector (``bench.analysis.detectors``). *False alerts*: alerts on the nights as recorded (the
code did not change). *Detection*: a step of 5, 10, 20 and 30% is planted into one series at a
time (its ratio and interval multiplied by 1 + step from night k on), at several nights k; a
detection is an alert on night k or k+1 (within 2 nights), the delay is the first alert's
night minus k. The other series stay as recorded (a detector that corrects across series sees
them as they were).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from bench.analysis.detectors import DETECTORS, Detector, machine_levels, steady_nights
from bench.analysis.history import benjamini_hochberg
from bench.errors import UserError
from bench.nightly import corpus as corpus_mod
from bench.nightly.runs import comparable, run_dirs
from bench.results.files import load_meta

STEPS = (0.05, 0.10, 0.20, 0.30)
SHIPPED = "paired"  # the detector the nightly uses, chosen by this evaluation (docs/nightly.md)
MIN_PREVIOUS = 5


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


def machine_steady(corpus: dict[str, Any]) -> np.ndarray:
    """Per night, whether the machine ran as usual (``detectors.steady_nights`` of the
    series' JIT-off medians), or the night has other framework versions than the night
    before (as ``bench.analysis.machine.machine_state`` decides)."""
    n = len(corpus["nights"])
    logs = [[math.log(v) if isinstance(v, (int, float)) and v > 0 else np.nan
             for v in (s.get("baseline_median_s") or [None] * n)]
            for s in corpus["series"].values()]
    steady = steady_nights(machine_levels(np.array(logs, float).reshape(len(logs), n)))
    versions = [json.dumps(night.get("versions"), sort_keys=True) for night in corpus["nights"]]
    return steady | np.array([t > 0 and versions[t] != versions[t - 1] for t in range(n)],
                             bool)


def _judge(det: Detector, x, lo, hi, threshold, steady=None):
    p, cand = det.judge(x, lo, hi, threshold=threshold,
                        **({"steady": steady} if det.machine_gate else {}))
    tested = ~np.isnan(x)
    tested &= np.array([np.count_nonzero(~np.isnan(x[:t])) >= MIN_PREVIOUS
                        for t in range(len(x))])
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
    """Nights a step is planted at: a third, half, two thirds in, and the second-last night
    (each with at least ``MIN_PREVIOUS`` nights before it)."""
    picks = {max(MIN_PREVIOUS, k) for k in (n // 3, n // 2, (2 * n) // 3, n - 2)}
    return sorted(k for k in picks if k < n - 1)


def evaluate(corpus: dict[str, Any], detector: str, threshold: float = 0.10,
             steps: tuple[float, ...] = STEPS) -> dict[str, Any]:
    if detector not in DETECTORS:
        raise UserError(f"unknown detector {detector!r}; valid: {', '.join(DETECTORS)}")
    det = DETECTORS[detector]
    ids, x, lo, hi = arrays(corpus)
    n = x.shape[1]
    steady = machine_steady(corpus)
    judged = [_judge(det, x[s], lo[s], hi[s], threshold, steady) for s in range(len(ids))]
    p_all = np.array([j[0] for j in judged]) if ids else np.zeros((0, n))
    false = []
    for s, (p, cand) in enumerate(judged):
        for t in np.nonzero(_alerts(det, p_all, cand, s, p))[0]:
            false.append({"series": ids[s], "night": corpus["nights"][t].get("run_id", t),
                          "ratio": float(math.exp(x[s, t]))})
    detection, delays, counts = {}, {}, {}
    where = positions(n)
    for step in steps:
        hits, delay, total = 0, [], 0
        for s in range(len(ids)):
            for k in where:
                if np.isnan(x[s, k]) or np.count_nonzero(~np.isnan(x[s, :k])) < MIN_PREVIOUS:
                    continue
                shift = np.where(np.arange(n) >= k, math.log1p(step), 0.0)
                p, cand = _judge(det, x[s] + shift, lo[s] + shift, hi[s] + shift, threshold,
                                 steady)
                alert = np.nonzero(_alerts(det, p_all, cand, s, p)[k:])[0]
                total += 1
                if alert.size and alert[0] <= 1:
                    hits += 1
                if alert.size:
                    delay.append(int(alert[0]))
        key = f"{step:g}"
        detection[key] = hits / total if total else None
        delays[key] = float(np.median(delay)) if delay else None
        counts[key] = total
    series_nights = int(sum(np.count_nonzero(~np.isnan(p)) for p, _ in judged))
    return {"detector": detector, "doc": det.doc, "nights": n, "series": len(ids),
            "series_nights_judged": series_nights, "false_alerts": len(false),
            "false_alert_list": false, "detection": detection, "delay_nights": delays,
            "injections": counts, "positions": where, "threshold": threshold,
            "unsteady_nights": [corpus["nights"][t].get("run_id", t)
                                for t in np.nonzero(~steady)[0]],
            "host": corpus.get("host", {})}


def evaluate_all(corpus: dict[str, Any], threshold: float = 0.10) -> dict[str, Any]:
    """The shipped detector's figures at the top level (the issue's JSON), every detector's
    under ``detectors``."""
    every = {name: evaluate(corpus, name, threshold) for name in DETECTORS}
    top = every[SHIPPED]
    return {"nights": top["nights"], "series": top["series"],
            "false_alerts": top["false_alerts"], "detection": top["detection"],
            "delay_nights": top["delay_nights"], "detector": SHIPPED,
            "host": top["host"], "detectors": every}


def table(result: dict[str, Any]) -> str:
    """The evaluation as text: one line per detector."""
    lines = [f"{result['nights']} nights x {result['series']} series "
             f"(host: {result['host'].get('node', '?')}, {result['host'].get('cpus', '?')} "
             f"cpus); steps planted at nights {result['detectors'][SHIPPED]['positions']}, "
             f"detected = an alert within 2 nights",
             f"{'detector':<10} {'false alerts':>13} " + " ".join(
                 f"{'det ' + k:>9}" for k in result["detection"]) + "  median delay (nights)"]
    for name, r in result["detectors"].items():
        det = " ".join(f"{100 * v:8.0f}%" if v is not None else f"{'-':>9}"
                       for v in r["detection"].values())
        delay = " / ".join("-" if v is None else f"{v:g}" for v in r["delay_nights"].values())
        mark = " *" if name == SHIPPED else ""
        lines.append(f"{name + mark:<10} {r['false_alerts']:>5} of {r['series_nights_judged']:<5}"
                     f" {det}  {delay}")
    lines.append("* the nightly's detector")
    return "\n".join(lines)
