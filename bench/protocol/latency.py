"""Latency beside throughput: each call alone, the device synced after it.

The timed samples (``jitbench.protocol.timing``) batch short calls so they pipeline, one sync per
sample: a *throughput* time per call, what a loop that never waits for a result pays. A server
answering one request, or a training loop reading its loss every step, waits for each call:
its *synced* time includes the dispatch the device can no longer hide (nvbench's "cold" time,
without the cache flush). The two differ most where a call is short and its dispatch long:
JIT saves host time there, and the pipelined ratio overstates what a synced caller gains.

A mode whose samples are one call each (``loops`` 1: a call of a millisecond or more) was
already timed that way: each sample is one call with the sync after it, so its samples are its
synced calls. After a group's interleaved sampling, :func:`run_synced` calls every mode that
batched its calls (``loops`` > 1) once per round, in turn, each call timed with its sync: the
rounds pair those modes in time, so :func:`synced_speedup` takes the ratio of their medians
with an interval from resampling whole rounds (or, against a mode whose synced calls are its
samples, each side resampled on its own). It stops after ``Protocol.synced_time`` seconds,
never before ``synced_min_rounds`` rounds.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from jitbench.protocol.samples import ModeResult, Notes, Timed

N_BOOT = 1000


def run_synced(modes: Sequence[Timed], results: Mapping[str, ModeResult], time_limit: float,
               min_rounds: int, max_rounds: int,
               clock: Callable[[], float], notes: Notes | None = None) -> None:
    """Rounds over the modes with samples (compiling ones too), one synced call each, into
    ``ModeResult.synced_samples``; one untimed synced call each first (the switch from the
    pipelined phase). A mode that raises here keeps its other results (``synced_error``).
    ``notes``: the framework's reasons for compiling, drained after each call into the mode
    that caused them (a mode recompiling every call must not lend its reasons to the next)."""
    live = []
    for t in modes:
        r = results.get(t.name)
        if r is None or not r.ok or not (r.samples or r.compiling_samples) or time_limit <= 0:
            continue
        if r.loops <= 1:  # its samples are single synced calls already
            r.synced_samples = list(r.samples or r.compiling_samples)
        else:
            r.synced_in_rounds = True
            live.append(t)
    if not live:
        return
    for t in list(live):
        try:
            t.sync(t.call())
        except Exception as exc:  # noqa: BLE001 -- extra information, never a failure
            results[t.name].synced_error = f"{type(exc).__name__}: {exc}"[:500]
            live.remove(t)
        results[t.name].note(notes)
    start = clock()
    rounds = 0
    while live and rounds < max_rounds:
        for t in list(live):
            try:
                t0 = clock()
                t.sync(t.call())
                results[t.name].synced_samples.append(clock() - t0)
            except Exception as exc:  # noqa: BLE001 -- as above
                results[t.name].synced_error = f"{type(exc).__name__}: {exc}"[:500]
                live.remove(t)
            results[t.name].note(notes)
        rounds += 1
        if rounds >= min_rounds and clock() - start >= time_limit:
            break


def pipelined(t: Timed, calls: int, samples: int,
              clock: Callable[[], float]) -> list[float]:
    """``samples`` times ``calls`` calls of ``t`` back to back, one sync after the last: the
    time per call of each (the throughput kind, for a front door whose own timing syncs every
    call: pytest-benchmark's)."""
    out = []
    for _ in range(samples):
        result = None
        t0 = clock()
        for _ in range(calls):
            result = t.call()
        t.sync(result)
        out.append((clock() - t0) / calls)
    return out


def synced_speedup(baseline: Sequence[float], jit: Sequence[float],
                   confidence: float = 0.95, seed: int = 0,
                   paired: bool = True) -> dict[str, float] | None:
    """median(baseline) / median(jit) of two modes' synced calls, with a ``confidence``
    interval: ``paired`` (taken in the same rounds) by resampling the rounds, both calls of a
    round together, so drift during the phase moves both; otherwise each side on its own. None
    with fewer than 3 calls on a side."""
    if min(len(baseline), len(jit)) < 3:
        return None
    rng = np.random.default_rng(seed)
    if paired:
        n = min(len(baseline), len(jit))
        b, j = np.asarray(baseline[:n], float), np.asarray(jit[:n], float)
        idx = jdx = rng.integers(0, n, size=(N_BOOT, n))
    else:
        b, j = np.asarray(baseline, float), np.asarray(jit, float)
        idx = rng.integers(0, len(b), size=(N_BOOT, len(b)))
        jdx = rng.integers(0, len(j), size=(N_BOOT, len(j)))
    ratios = np.median(b[idx], axis=1) / np.median(j[jdx], axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(ratios, [alpha, 1.0 - alpha])
    return {"speedup": float(np.median(b) / np.median(j)), "ci_low": float(lo),
            "ci_high": float(hi)}


def latency_fields(mode: str, results: Mapping[str, ModeResult], baseline: str | None,
                   confidence: float = 0.95) -> dict[str, Any]:
    """Row fields: ``synced_median_s`` and ``synced_samples`` of every mode with synced calls;
    for a JIT mode, ``synced_speedup``, ``synced_ci_low`` / ``synced_ci_high`` against
    ``baseline`` (its verdict's), and ``synced_vs_pipelined``: how many times its pipelined
    speedup the synced one is, where the row's verdict gives the pipelined one."""
    r = results[mode]
    out: dict[str, Any] = {}
    if r.synced_error:
        out["synced_error"] = r.synced_error
    if not r.synced_samples:
        return out
    out["synced_median_s"] = float(np.median(r.synced_samples))
    out["synced_samples"] = list(r.synced_samples)
    base = results.get(baseline) if baseline else None
    if base is None or baseline == mode or not base.synced_samples:
        return out
    s = synced_speedup(base.synced_samples, r.synced_samples, confidence,
                       paired=base.synced_in_rounds and r.synced_in_rounds)
    if s is None:
        return out
    out.update(synced_speedup=s["speedup"], synced_ci_low=s["ci_low"],
               synced_ci_high=s["ci_high"])
    piped = (r.verdicts.get(baseline) or {}).get("speedup")
    if piped and math.isfinite(piped) and piped > 0:
        out["synced_vs_pipelined"] = s["speedup"] / piped
    return out
