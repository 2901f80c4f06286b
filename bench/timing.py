"""The measurement protocol, identical for every mode and blind to the framework.

For each mode of one case group:

1. **first call** timed alone (trace + compile + run, ending with a sync);
2. **calls 2-5** timed one by one and kept (a mode that keeps compiling shows here);
3. **warm-up** until a few calls in a row compile nothing and their times settle;
4. **calibration**: calls per sample (``loops``) so timer + sync overhead stays below
   ``target_overhead`` of a sample;
5. **timed samples**, modes interleaved sample by sample, each sample ``loops`` calls then one
   sync; a sample during which anything compiled is set apart, not mixed into the statistics.

The core takes its clock and its compile counter as arguments, so the arithmetic is tested
exactly with a fake clock (tests/test_timing.py).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from typing import Any, Callable, Mapping

Counters = Callable[[], Mapping[str, float]]


@dataclasses.dataclass(frozen=True)
class Protocol:
    min_time: float = 0.5  # seconds of valid timed samples per mode (at least)
    min_samples: int = 7
    max_samples: int = 500
    max_time: float = 30.0  # hard cap on the timed phase of one mode
    early_calls: int = 4  # calls 2..5, timed one by one
    warmup_min_calls: int = 3  # consecutive compile-free calls needed
    warmup_max_time: float = 5.0
    settle_tolerance: float = 0.25  # last warm-up call within 25% of the median of the last few
    target_overhead: float = 0.01  # timer + sync overhead per sample, as a fraction
    max_loops: int = 10_000


@dataclasses.dataclass
class Timed:
    """One mode, ready to time: ``call()`` runs it on already placed inputs, ``sync(out)``
    blocks until ``out`` is computed on the device."""

    name: str
    call: Callable[[], Any]
    sync: Callable[[Any], None]


@dataclasses.dataclass
class ModeResult:
    name: str
    output: Any = None
    error: BaseException | None = None
    error_phase: str = ""
    first_call_s: float | None = None
    early_calls_s: list[float] = dataclasses.field(default_factory=list)
    warmup_calls: int = 0
    warmup_s: float = 0.0
    settled: bool = False
    loops: int = 1
    overhead_s: float = 0.0
    samples: list[float] = dataclasses.field(default_factory=list)  # seconds per call
    compiling_samples: list[float] = dataclasses.field(default_factory=list)
    counters_first: dict[str, float] = dataclasses.field(default_factory=dict)
    counters_warmup: dict[str, float] = dataclasses.field(default_factory=dict)
    counters_samples: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def steady_state_compiles(self) -> bool:
        """True when the mode still compiled inside timed samples."""
        return bool(self.compiling_samples)


def _diff(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}


def _add(total: dict[str, float], delta: Mapping[str, float]) -> None:
    for k, v in delta.items():
        total[k] = total.get(k, 0) + v


def _one_call(t: Timed, clock: Callable[[], float]) -> tuple[float, Any]:
    t0 = clock()
    out = t.call()
    t.sync(out)
    return clock() - t0, out


def _sync_overhead(t: Timed, out: Any, clock: Callable[[], float], reps: int = 20) -> float:
    """Median cost of reading the clock twice plus one sync of an already finished output."""
    costs = []
    for _ in range(reps):
        t0 = clock()
        t.sync(out)
        costs.append(clock() - t0)
    return statistics.median(costs)


def first_and_warmup(t: Timed, p: Protocol, counters: Counters,
                     clock: Callable[[], float]) -> ModeResult:
    """Phases 1-4 for one mode. Exceptions are kept in the result, never raised."""
    r = ModeResult(t.name)
    phase = "first_call"
    try:
        c0 = dict(counters())
        r.first_call_s, r.output = _one_call(t, clock)
        c1 = dict(counters())
        r.counters_first = _diff(c1, c0)

        phase = "warmup"
        times: list[float] = []
        clean = 0
        start = clock()
        while True:
            before = dict(counters())
            dt, _ = _one_call(t, clock)
            delta = _diff(counters(), before)
            _add(r.counters_warmup, delta)
            times.append(dt)
            if len(r.early_calls_s) < p.early_calls:
                r.early_calls_s.append(dt)
            clean = 0 if delta.get("compiles", 0) > 0 else clean + 1
            recent = times[-p.warmup_min_calls:]
            settled = (clean >= p.warmup_min_calls and len(times) >= p.early_calls
                       and abs(dt - statistics.median(recent)) <= p.settle_tolerance
                       * statistics.median(recent))
            if settled:
                r.settled = True
                break
            if clock() - start > p.warmup_max_time and len(times) >= p.early_calls:
                break
        r.warmup_calls = len(times)
        r.warmup_s = sum(times)

        phase = "calibration"
        r.overhead_s = _sync_overhead(t, r.output, clock)
        per_call = max(statistics.median(times[-p.warmup_min_calls:]) - r.overhead_s, 1e-9)
        needed = r.overhead_s / (p.target_overhead * per_call)
        r.loops = int(min(p.max_loops, max(1, math.ceil(needed))))
    except Exception as exc:  # a failing mode is a result, the other modes go on
        r.error, r.error_phase = exc, phase
    return r


def _take_sample(t: Timed, r: ModeResult, counters: Counters,
                 clock: Callable[[], float]) -> float:
    before = dict(counters())
    t0 = clock()
    out = None
    for _ in range(r.loops):
        out = t.call()
    t.sync(out)
    elapsed = clock() - t0
    delta = _diff(counters(), before)
    _add(r.counters_samples, delta)
    per_call = elapsed / r.loops
    if delta.get("compiles", 0) > 0:
        r.compiling_samples.append(per_call)
    else:
        r.samples.append(per_call)
    return elapsed


def measure(modes: list[Timed], protocol: Protocol = Protocol(),
            counters: Counters = lambda: {},
            clock: Callable[[], float] = time.perf_counter) -> dict[str, ModeResult]:
    """Run the whole protocol on the modes of one case group; one ``ModeResult`` per mode."""
    results = {t.name: first_and_warmup(t, protocol, counters, clock) for t in modes}
    live = [t for t in modes if results[t.name].ok]
    spent = {t.name: 0.0 for t in live}
    while live:
        for t in list(live):  # one sample of each live mode per round: drift hits all alike
            r = results[t.name]
            try:
                spent[t.name] += _take_sample(t, r, counters, clock)
            except Exception as exc:
                r.error, r.error_phase = exc, "timed_samples"
                live.remove(t)
                continue
            valid_time = sum(r.samples) * r.loops
            n_all = len(r.samples) + len(r.compiling_samples)
            done = ((valid_time >= protocol.min_time and len(r.samples) >= protocol.min_samples)
                    or n_all >= protocol.max_samples
                    # its steady state *is* compilation: more samples will not change that
                    or len(r.compiling_samples) >= protocol.min_samples
                    or (spent[t.name] >= protocol.max_time
                        and n_all >= min(3, protocol.min_samples)))
            if done:
                live.remove(t)
    return results


def summarize(samples: list[float]) -> dict[str, float | None]:
    """Statistics of per-call times (seconds)."""
    if not samples:
        return dict(median_s=None, mean_s=None, stdev_s=None, iqr_s=None, min_s=None,
                    max_s=None)
    s = sorted(samples)
    if len(s) >= 2:
        q = statistics.quantiles(s, n=4, method="inclusive")
        iqr = q[2] - q[0]
        stdev = statistics.stdev(s)
    else:
        iqr, stdev = 0.0, 0.0
    return dict(median_s=statistics.median(s), mean_s=statistics.fmean(s), stdev_s=stdev,
                iqr_s=iqr, min_s=s[0], max_s=s[-1])
