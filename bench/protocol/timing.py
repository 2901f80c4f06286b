"""The measurement protocol, identical for every mode and blind to the framework.

For each mode of one case group:

1. **first call** timed alone (trace + compile + run, ending with a sync);
2. **calls 2-5** timed one by one and kept (a mode that keeps compiling shows here);
3. **warm-up** until a few calls in a row compile nothing and their times settle, or until
   a few calls in a row each compiled as much as the last and their times settle (a mode
   whose steady state is compiling: it is measured as such, ``compiling_samples``);
4. **calibration**: calls per sample (``loops``) so timer + sync overhead stays below
   ``target_overhead`` of a sample, and (sequential stopping) so a sample lasts
   ``sample_min_time``, and for a mode whose calls pipeline (a call alone takes longer than
   its share of calls back to back) so the dispatch a sample's sync leaves unhidden stays below
   ``target_overhead`` too, up to ``pipeline_time``: back-to-back calls, as in a user's loop;
5. **timed samples**, modes interleaved (``Protocol.interleave``, :data:`INTERLEAVE_SCHEMES`),
   each sample ``loops`` calls then one sync; a sample during which anything compiled is set
   apart, not mixed into the statistics;
6. **interference check**: when several modes were interleaved, two rounds of a short block
   of each mode alone (each after ``switch_calls`` untimed calls), so a row can say whether
   interleaving moved its median (:func:`jitbench.protocol.interference.interference`). Both come
   after
   the interleaved phase: a block right after the warm-up caught TF's first while_loop
   function of a process in its slow first ~100 calls (rnn graph 1.1 ms, later 0.87 ms).

Between 5 and 6, **synced calls**: rounds of one call per mode, each timed with its sync
(the latency a caller waiting for every result pays; :mod:`jitbench.protocol.latency`).

The core takes its clock and its compile counter as arguments, so the arithmetic is tested
exactly with a fake clock (tests/test_timing.py).
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable, Sequence

from jitbench.protocol.latency import run_synced
from jitbench.protocol.rounds import FixedStop, Stopping, run_rounds
from jitbench.protocol.samples import (  # noqa: F401  (Timed, ModeResult: re-exported)
    Counters,
    ModeResult,
    Notes,
    Timed,
    counter_add,
    counter_diff,
    one_call,
    take_sample,
    untimed_calls,
)

from jitbench.protocol.settings import (  # noqa: F401  (re-exported: the phases' old face)
    AA_CONTROL,
    INTERLEAVE_SCHEMES,
    STOP_WHEN,
    Protocol,
)


def _sync_overhead(t: Timed, out: Any, clock: Callable[[], float], reps: int = 20) -> float:
    """Median cost of reading the clock twice plus one sync of an already finished output."""
    costs = []
    for _ in range(reps):
        t0 = clock()
        t.sync(out)
        costs.append(clock() - t0)
    return statistics.median(costs)


def first_and_warmup(t: Timed, p: Protocol, counters: Counters,
                     clock: Callable[[], float], notes: Notes | None = None) -> ModeResult:
    """Phases 1-4 for one mode. Exceptions are kept in the result, never raised."""
    r = ModeResult(t.name)
    phase = "first_call"
    try:
        if notes is not None:
            notes()  # what earlier work left unread is no reason of this mode's
        c0 = dict(counters())
        r.first_call_s, r.output = one_call(t, clock)
        c1 = dict(counters())
        r.counters_first = counter_diff(c1, c0)
        r.note(notes, first=True)

        phase = "warmup"
        times: list[float] = []
        compiled: list[float] = []  # compiles of each warm-up call
        clean = 0
        start = clock()
        while True:
            before = dict(counters())
            dt, _ = one_call(t, clock)
            delta = counter_diff(counters(), before)
            counter_add(r.counters_warmup, delta)
            r.note(notes)
            times.append(dt)
            compiled.append(delta.get("compiles", 0))
            if len(r.early_calls_s) < p.early_calls:
                r.early_calls_s.append(dt)
            clean = 0 if compiled[-1] > 0 else clean + 1
            recent = times[-p.warmup_min_calls:]
            steady = (len(times) >= p.early_calls and abs(dt - statistics.median(recent))
                      <= p.settle_tolerance * statistics.median(recent))
            if steady and clean >= p.warmup_min_calls:
                r.settled = True
                break
            if steady and _compiles_every_call(compiled, p.warmup_min_calls):
                break  # its steady state *is* compiling: warming up longer changes nothing
            if clock() - start > p.warmup_max_time and len(times) >= p.early_calls:
                break
        r.warmup_calls = len(times)
        r.warmup_s = sum(times)

        phase = "calibration"
        r.overhead_s = _sync_overhead(t, r.output, clock)
        per_call = max(statistics.median(times[-p.warmup_min_calls:]) - r.overhead_s, 1e-9)
        needed = r.overhead_s / (p.target_overhead * per_call)
        if p.precision is not None:  # and a sample long enough that calls pipeline as in a loop
            needed = max(needed, p.sample_min_time / per_call)
            if (p.pipeline_time and p.pipeline_time > p.sample_min_time and t.pipelines
                    and per_call < p.pipeline_time):  # (a GPU's 10-ms floor hides it anyway)
                needed = max(needed, _pipelined_loops(t, r, per_call, p, counters, clock,
                                                      notes))
        r.loops = int(min(p.max_loops, max(1, math.ceil(round(needed, 6)))))
    except Exception as exc:  # a failing mode is a result, the other modes go on
        r.error, r.error_phase = exc, phase
    return r


# what the dispatch left unhidden may add to a pipelining mode's time per call, as a fraction
# (by the gap's arithmetic: a call's share of it; a short run of calls pays more than that
# warming up: at 2% a 0.33-ms JAX MLP step made ~18 calls a sample and read 1.15x its loop)
PIPELINE_BIAS = 0.01
# ...in at most this many calls: a sample of tiny calls (a 15-us matmul) is not made longer
# than the overhead rule and sample_min_time make it, where its probe's gap is mostly noise
PIPELINE_CALLS = 32


def _pipelined_loops(t: Timed, r: ModeResult, synced: float, p: Protocol, counters: Counters,
                     clock: Callable[[], float], notes: Notes | None = None) -> float:
    """Calls per sample so that what a sample's last sync leaves unhidden costs under
    :data:`PIPELINE_BIAS` of the sample, at most ``pipeline_time`` long: a call alone, synced,
    takes ``synced`` (its warm-up time); back to back, ``pipelined`` each (the median of three
    probes of ``pipeline_time``: one probe of a matmul's independent calls read a quarter of
    their time now and then); the difference (``r.pipeline_gap_s``) is the dispatch a loop
    hides and a short sample pays once. A mode that does not pipeline (gap ~0) keeps the
    overhead rule's calls. The probes are samples as the timed phase takes them, kept apart
    (their compiles counted there, not in the mode's samples)."""
    k = max(2, min(p.max_loops, math.ceil(p.pipeline_time / synced)))
    probe = ModeResult(t.name, loops=k)
    for _ in range(3):
        take_sample(t, probe, counters, clock, notes=notes)
    per_call = probe.samples + probe.compiling_samples
    pipelined = max(statistics.median(per_call) - r.overhead_s / k, 1e-9)
    r.pipeline_gap_s = max(0.0, synced - pipelined)
    return min(r.pipeline_gap_s / (PIPELINE_BIAS * pipelined), p.pipeline_time / pipelined,
               PIPELINE_CALLS)


def _compiles_every_call(compiled: Sequence[float], n: int) -> bool:
    """The last ``n`` (at least 2) calls each compiled, as many times each: a mode that
    compiles on every call (JAX op-by-op through a ``scan`` it traces again each time)."""
    last = compiled[-max(2, n):]
    return len(last) >= max(2, n) and last[0] > 0 and all(c == last[0] for c in last)


def _alone(t: Timed, r: ModeResult, into: list[float], untimed: int, p: Protocol,
           counters: Counters, clock: Callable[[], float], notes: Notes | None = None) -> None:
    """Phase 6: one block of mode ``t`` alone (after ``untimed`` untimed calls), kept in
    ``into``, so its interleaved median can be compared with itself not interleaved. A
    failure here is noted; the interleaved samples stand."""
    if not r.ok:
        return
    try:
        untimed_calls(t, r, counters, untimed, notes)
        start = clock()
        while len(into) < p.alone_samples:
            take_sample(t, r, counters, clock, into=into, notes=notes)
            if clock() - start > p.alone_max_time and len(into) >= 3:
                break
    except Exception as exc:  # noqa: BLE001 -- extra information, never a failure
        r.alone_error = f"{type(exc).__name__}: {exc}"


def measure(modes: list[Timed], protocol: Protocol = Protocol(),
            counters: Counters = lambda: {},
            clock: Callable[[], float] = time.perf_counter,
            notes: Notes | None = None,
            pairs: Sequence[tuple[str, str]] = (),
            controls: Sequence[tuple[str, str]] = (),
            others: Sequence[tuple[str, str]] = ()) -> dict[str, ModeResult]:
    """Run the whole protocol on the modes of one case group; one ``ModeResult`` per mode.
    ``notes``: the framework's reasons for compiling (``adapter.compile_notes``), kept per
    mode in ``first_notes`` and ``later_notes``. ``pairs``: (JIT mode, its baseline) whose
    verdicts decide when sampling stops (``protocol.precision`` set; without pairs, the fixed
    protocol: ``min_time`` per mode); ``controls``: pairs judged alike that keep nothing sampling
    (the A/A control); ``others``: pairs judged once from the same blocks when sampling ends
    (a JIT mode against a JIT-off mode other than its nearest)."""
    results = {t.name: first_and_warmup(t, protocol, counters, clock, notes) for t in modes}
    if protocol.precision is None or not pairs:  # nothing to judge: the fixed protocol
        stop: Stopping = FixedStop(protocol, results)
    else:
        from jitbench.protocol.sequential import SequentialStop

        stop = SequentialStop(protocol, results, pairs, controls, others)
    run_rounds(modes, results, protocol, stop, counters, clock, notes)
    controls_only = {c for c, _ in controls} - {m for pair in pairs for m in pair}
    run_synced([t for t in modes if t.name not in controls_only], results,
               protocol.synced_time, protocol.synced_min_rounds, protocol.synced_max_rounds,
               clock, notes)
    if protocol.alone_samples and sum(1 for r in results.values() if r.samples) > 1:
        for blocks in ("alone_samples", "alone_again_samples"):  # two rounds over the modes
            for t in modes:  # switched to like any turn, at least one untimed call
                r = results[t.name]
                if r.samples:
                    _alone(t, r, getattr(r, blocks), max(1, protocol.switches), protocol,
                           counters, clock, notes)
    return results


MAD_TO_SIGMA = 1.4826  # MAD of a normal sample x this = its standard deviation


def robust_sigma(values: Sequence[float], center: float | None = None) -> float:
    """1.4826 x the median absolute deviation of ``values`` from ``center`` (default: their
    median): a standard deviation one outlier does not set."""
    c = statistics.median(values) if center is None else center
    return MAD_TO_SIGMA * float(statistics.median(abs(float(v) - c) for v in values))


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
