"""The measurement protocol, identical for every mode and blind to the framework.

For each mode of one case group:

1. **first call** timed alone (trace + compile + run, ending with a sync);
2. **calls 2-5** timed one by one and kept (a mode that keeps compiling shows here);
3. **warm-up** until a few calls in a row compile nothing and their times settle, or until
   a few calls in a row each compiled as much as the last and their times settle (a mode
   whose steady state is compiling: it is measured as such, ``compiling_samples``);
4. **calibration**: calls per sample (``loops``) so timer + sync overhead stays below
   ``target_overhead`` of a sample, and (sequential stopping) so a sample lasts
   ``sample_min_time``: back-to-back calls, pipelined as in a user's loop;
5. **timed samples**, modes interleaved (``Protocol.interleave``, :data:`INTERLEAVE_SCHEMES`),
   each sample ``loops`` calls then one sync; a sample during which anything compiled is set
   apart, not mixed into the statistics;
6. **interference check**: when several modes were interleaved, two rounds of a short block
   of each mode alone (each after ``switch_calls`` untimed calls), so a row can say whether
   interleaving moved its median (:func:`jitbench.protocol.interference.interference`). Both come after
   the interleaved phase: a block right after the warm-up caught TF's first while_loop
   function of a process in its slow first ~100 calls (rnn graph 1.1 ms, later 0.87 ms).

Between 5 and 6, **synced calls**: rounds of one call per mode, each timed with its sync
(the latency a caller waiting for every result pays; :mod:`jitbench.protocol.latency`).

The core takes its clock and its compile counter as arguments, so the arithmetic is tested
exactly with a fake clock (tests/test_timing.py).
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import time
from typing import Any, Callable, Sequence

from jitbench.protocol.latency import run_synced
from jitbench.protocol.samples import (  # noqa: F401  (Timed, ModeResult: re-exported)
    Counters,
    ModeResult,
    Notes,
    Timed,
    _add,
    _diff,
    _one_call,
    _take_sample,
    _untimed,
)

# How the timed phase alternates the modes of a group. Drift (thermal, other processes) hits
# interleaved modes alike, so their ratio survives it; but a mode may also disturb the next one
# (a thread pool still spinning, evicted caches), which the interference check measures.
INTERLEAVE_SCHEMES = {
    "sample": "one sample of each mode in turn, always in the same order",
    "block": "block_samples samples of a mode in a row, then the next mode",
    "random": "one sample of each mode per round, in a new random order each round",
    "abba": "block_samples samples of a mode in a row, the order of the modes reversed every "
            "round (A B C C B A ...): each mode follows each other one as often as it "
            "precedes it, so what a mode leaves behind for the next one cancels",
}
STOP_WHEN = ("verdict", "precise")
AA_CONTROL = ("first", "every", "off")  # which groups of a worker carry the A/A control


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
    # with sequential stopping, a sample also lasts about this long at least: JAX dispatches
    # asynchronously, so a 64x64 matmul+relu jit call took 27 us with a sync after each call
    # and 13-15 us 10-50 calls to a sync; the overhead rule alone gave 2-5 calls per sample,
    # and the jit/eager speedup read 7.6-11.1x run to run (docs/findings.md, 2026-11-24). The
    # fixed protocol (the nightly's) keeps the overhead rule alone, so recorded nights compare
    sample_min_time: float = 0.001
    # block: the scheme whose interleaved speedups agreed with the modes measured alone
    # (docs/protocol.md: TF rnn forward xla vs graph, 3 runs of each scheme)
    interleave: str = "block"  # a key of INTERLEAVE_SCHEMES
    block_samples: int = 5  # samples per turn, "block" and "abba" only
    # untimed calls of a mode each time the timed loop switches to it. With 1, the first
    # sample of each block ran 1-8% slower than the rest (TF eager <-> graph worst), which
    # made the 0-cluster auto-clustering rows read 1.01-1.02x "faster" than graph, the same
    # program; with 5 the first sample is within 0.3-0.9% and they read 1.00x (docs/protocol.md,
    # "Measurement protocol"). None: 5 with the fixed protocol; 1 with sequential stopping,
    # whose unit is a block's median, which one slow first sample does not move (3 quick runs:
    # the 0-cluster and A/A verdicts, docs/statistics.md, "What each piece costs")
    switch_calls: int | None = None
    alone_samples: int = 5  # interference check: samples per block alone (0: no check)
    # which groups of a worker run the interference check: "first" (the check of the scheme
    # once per worker, ~10% of a run's time when every group ran it) or "every"
    interference_check: str = "first"
    alone_max_time: float = 2.0  # per block; at least 3 samples are taken anyway
    interference_tolerance: float = 0.03  # a smaller shift is never called interference
    interference_z: float = 3.0  # ...nor one within z robust sigmas of the interleaved blocks
    seed: int = 0  # of the "random" order
    # the worker measures its framework's nearest JIT-off mode a second time, built afresh and
    # interleaved like a JIT mode: in each group ("every"), or in the first group it runs.
    # One group's interval is too narrow a yardstick: in 3 runs of matmul_relu tf, the 0-cluster
    # auto-clustering ratios fell inside the first group's A/A interval in 3-4 of 6 groups,
    # inside the band of all groups' A/A intervals in 6 of 6 (docs/protocol.md, "A/A control")
    aa_control: str = "every"
    # sequential stopping (jitbench.protocol.sequential): each group samples until every pair's
    # verdict is known at this precision (half-width of the interval, a fraction), or until
    # ``budget`` seconds of its timed phase are spent. None: the fixed protocol (min_time /
    # min_samples per mode), kept for comparison (``--precision off``)
    precision: float | None = 0.05
    budget: float = 6.0  # seconds of interleaved sampling per group, at most
    block_time: float = 0.25  # with sequential stopping, a block ends after 3 samples and this
    tolerance: float = 0.05  # the "same" band: within +-5% of 1.00x
    confidence: float = 0.95
    # between-build standard deviation of a speedup's log, added to the blocks' error
    # (jitbench.protocol.sequential). Identical builds side by side (A/A controls and 0-cluster
    # auto-clustering rows, 60 pairs in 8 runs of matmul_relu/mmd quick, 2026-11-24): robust
    # sd of their log ratios 1.4% (TF) and 1.6% (JAX), of which the blocks explain ~1.2%
    # (docs/statistics.md, "Builds")
    build_sigma: float = 0.01
    # when a pair has sampled enough: "verdict" (its verdict is known: the default) or
    # "precise" (its interval is within +-precision whatever the verdict: the nightly, which
    # follows each ratio from night to night rather than its verdict)
    stop_when: str = "verdict"
    # latency beside throughput (jitbench.protocol.latency): after the interleaved sampling,
    # rounds of one synced call per mode for this long, at least synced_min_rounds rounds
    synced_time: float = 0.3
    synced_min_rounds: int = 5
    synced_max_rounds: int = 200

    @property
    def switches(self) -> int:
        """Untimed calls after each switch of mode (``switch_calls``, or its default)."""
        if self.switch_calls is not None:
            return self.switch_calls
        return 5 if self.precision is None else 1

    def rule(self):
        """The stopping rule of ``precision``, its error rate split over the looks a group
        can make before ``max_samples``, plus the final one at the budget."""
        from jitbench.protocol.sequential import LOOK_ROUNDS, Rule

        per_turn = self.block_samples if self.interleave in ("block", "abba") else 1
        max_rounds = max(1, math.ceil(self.max_samples / per_turn))
        looks = sum(1 for n in LOOK_ROUNDS if n <= max_rounds) + 1
        return Rule(precision=self.precision or 0.05, tolerance=self.tolerance,
                    confidence=self.confidence, looks=looks, build_sigma=self.build_sigma,
                    stop_when=self.stop_when)

    def __post_init__(self):
        if self.interleave not in INTERLEAVE_SCHEMES:
            raise ValueError(f"unknown interleave scheme {self.interleave!r}; valid: "
                             f"{', '.join(INTERLEAVE_SCHEMES)}")
        if self.aa_control not in AA_CONTROL:
            raise ValueError(f"unknown aa_control {self.aa_control!r}; valid: "
                             f"{', '.join(AA_CONTROL)}")
        if self.stop_when not in STOP_WHEN:
            raise ValueError(f"unknown stop_when {self.stop_when!r}; valid: "
                             f"{', '.join(STOP_WHEN)}")
        if self.interference_check not in ("first", "every"):
            raise ValueError(f"unknown interference_check {self.interference_check!r}; "
                             f"valid: first, every")
        if self.block_samples < 1 or self.switches < 0 or self.alone_samples < 0:
            raise ValueError(f"block_samples must be >= 1, switch_calls and alone_samples "
                             f">= 0; got {self.block_samples}, {self.switch_calls}, "
                             f"{self.alone_samples}")
        if self.precision is not None and not 0 < self.precision < 1:
            raise ValueError(f"precision must be a fraction in (0, 1) or None (off); got "
                             f"{self.precision!r}")
        if not (self.budget > 0 and self.block_time > 0 and self.sample_min_time >= 0
                and 0 < self.tolerance < 1
                and 0.5 < self.confidence < 1):
            raise ValueError(f"budget and block_time must be > 0 s, sample_min_time >= 0 s, "
                             f"tolerance in (0, 1), confidence in (0.5, 1); got "
                             f"{self.budget!r}, {self.block_time!r}, {self.sample_min_time!r}, "
                             f"{self.tolerance!r}, {self.confidence!r}")


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
        r.first_call_s, r.output = _one_call(t, clock)
        c1 = dict(counters())
        r.counters_first = _diff(c1, c0)
        r.note(notes, first=True)

        phase = "warmup"
        times: list[float] = []
        compiled: list[float] = []  # compiles of each warm-up call
        clean = 0
        start = clock()
        while True:
            before = dict(counters())
            dt, _ = _one_call(t, clock)
            delta = _diff(counters(), before)
            _add(r.counters_warmup, delta)
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
        r.loops = int(min(p.max_loops, max(1, math.ceil(round(needed, 6)))))
    except Exception as exc:  # a failing mode is a result, the other modes go on
        r.error, r.error_phase = exc, phase
    return r


def _compiles_every_call(compiled: Sequence[float], n: int) -> bool:
    """The last ``n`` (at least 2) calls each compiled, as many times each: a mode that
    compiles on every call (JAX op-by-op through a ``scan`` it traces again each time)."""
    last = compiled[-max(2, n):]
    return len(last) >= max(2, n) and last[0] > 0 and all(c == last[0] for c in last)


def _done(r: ModeResult, p: Protocol, spent: float) -> bool:
    valid_time = sum(r.samples) * r.loops
    n_all = len(r.samples) + len(r.compiling_samples)
    return ((valid_time >= p.min_time and len(r.samples) >= p.min_samples)
            or n_all >= p.max_samples
            # its steady state *is* compilation: more samples will not change that
            or len(r.compiling_samples) >= p.min_samples
            or (spent >= p.max_time and n_all >= min(3, p.min_samples)))


def _interleaved(modes: list[Timed], results: dict[str, ModeResult], p: Protocol,
                 counters: Counters, clock: Callable[[], float],
                 notes: Notes | None = None) -> None:
    """Phase 5: turns of the live modes in the order ``p.interleave`` says, until each is
    done; ``p.switches`` untimed calls whenever the loop moves to another mode."""
    live = [t for t in modes if results[t.name].ok]
    spent = {t.name: 0.0 for t in live}
    per_turn = p.block_samples if p.interleave in ("block", "abba") else 1
    rng = random.Random(p.seed)
    last = live[-1].name if live else None  # the warm-up of the last mode ran just before
    rounds = 0
    while live:
        order = list(live)
        if p.interleave == "random":
            rng.shuffle(order)
        elif p.interleave == "abba" and rounds % 2:
            order.reverse()
        rounds += 1
        for t in order:
            r = results[t.name]
            try:
                if t.name != last:
                    _untimed(t, r, counters, p.switches, notes)
                last = t.name
                for _ in range(per_turn):
                    spent[t.name] += _take_sample(t, r, counters, clock, notes=notes)
                    if _done(r, p, spent[t.name]):
                        live.remove(t)
                        break
            except Exception as exc:
                r.error, r.error_phase = exc, "timed_samples"
                live.remove(t)


def _alone(t: Timed, r: ModeResult, into: list[float], untimed: int, p: Protocol,
           counters: Counters, clock: Callable[[], float], notes: Notes | None = None) -> None:
    """Phase 6: one block of mode ``t`` alone (after ``untimed`` untimed calls), kept in
    ``into``, so its interleaved median can be compared with itself not interleaved. A
    failure here is noted; the interleaved samples stand."""
    if not r.ok:
        return
    try:
        _untimed(t, r, counters, untimed, notes)
        start = clock()
        while len(into) < p.alone_samples:
            _take_sample(t, r, counters, clock, into=into, notes=notes)
            if clock() - start > p.alone_max_time and len(into) >= 3:
                break
    except Exception as exc:  # noqa: BLE001 -- extra information, never a failure
        r.alone_error = f"{type(exc).__name__}: {exc}"


def measure(modes: list[Timed], protocol: Protocol = Protocol(),
            counters: Counters = lambda: {},
            clock: Callable[[], float] = time.perf_counter,
            notes: Notes | None = None,
            pairs: Sequence[tuple[str, str]] = (),
            controls: Sequence[tuple[str, str]] = ()) -> dict[str, ModeResult]:
    """Run the whole protocol on the modes of one case group; one ``ModeResult`` per mode.
    ``notes``: the framework's reasons for compiling (``adapter.compile_notes``), kept per
    mode in ``first_notes`` and ``later_notes``. ``pairs``: (JIT mode, its baseline) whose
    verdicts decide when sampling stops (``protocol.precision`` set; without pairs, the fixed
    protocol: ``min_time`` per mode); ``controls``: pairs judged alike that keep nothing sampling
    (the A/A control)."""
    results = {t.name: first_and_warmup(t, protocol, counters, clock, notes) for t in modes}
    if protocol.precision is None or not pairs:  # nothing to judge: the fixed protocol
        _interleaved(modes, results, protocol, counters, clock, notes)
    else:
        from jitbench.protocol.sequential import run_sequential

        run_sequential(modes, results, protocol, pairs, counters, clock, notes, controls)
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
