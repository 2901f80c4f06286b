"""The timing arithmetic, exactly, with a fake clock (pyperf's trick: +1.0 per read)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from jitbench.protocol.interference import interference
from jitbench.protocol.timing import (
    ModeResult,
    Protocol,
    Timed,
    first_and_warmup,
    measure,
    summarize,
)

pytestmark = pytest.mark.unit  # no child process, no framework import


def Fixed(**kw) -> Protocol:  # noqa: N802 -- reads as the Protocol it makes
    """The fixed protocol (``--precision off``): these tests count its samples exactly."""
    return Protocol(precision=None, **kw)


class FakeClock:
    """Advances 1.0 per read, plus whatever the code under test 'spends'."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def make_mode(name, clock, cost=0.0, compiles_on=(), counter=None, log=None):
    calls = itertools.count(1)

    def call():
        n = next(calls)
        clock.spend(cost)
        if counter is not None and n in compiles_on:
            counter["compiles"] += 1
        if log is not None:
            log.append(name)
        return n

    return Timed(name, call, sync=lambda out: None)


def test_first_call_is_timed_alone_and_warmup_counts_calls_2_to_5():
    clock = FakeClock()
    p = Protocol(early_calls=4, warmup_min_calls=3)
    r = first_and_warmup(make_mode("m", clock, cost=2.0), p, lambda: {}, clock)
    assert r.ok
    # two clock reads (+1 each... the second read gives the difference) + 2.0 spent
    assert r.first_call_s == pytest.approx(3.0)
    assert r.early_calls_s == [3.0, 3.0, 3.0, 3.0]
    assert r.warmup_calls == 4 and r.settled
    # sync overhead = one clock read interval with a no-op sync
    assert r.overhead_s == pytest.approx(1.0)
    # per call 3.0 - 1.0 overhead = 2.0; needed loops = 1.0 / (0.01 * 2.0) = 50
    assert r.loops == 50


def test_compiles_in_first_call_and_warmup_are_counted_apart():
    clock = FakeClock()
    counter = {"compiles": 0}
    p = Protocol(early_calls=4, warmup_min_calls=3, warmup_max_time=1e9)
    mode = make_mode("m", clock, compiles_on={1, 3}, counter=counter)
    r = first_and_warmup(mode, p, lambda: dict(counter), clock)
    assert r.settled
    assert r.counters_first["compiles"] == 1
    assert r.counters_warmup["compiles"] == 1
    # call 3 compiled, so three clean calls (4, 5, 6) are needed after it
    assert r.warmup_calls == 5


def test_a_mode_that_compiles_on_every_call_ends_its_warmup_unsettled():
    clock = FakeClock()
    counter = {"compiles": 0}
    p = Protocol(early_calls=4, warmup_min_calls=3, warmup_max_time=1e9)
    mode = make_mode("m", clock, compiles_on=set(range(1, 1000)), counter=counter)
    r = first_and_warmup(mode, p, lambda: dict(counter), clock)
    # calls 2-5 each compiled once and took as long: its steady state is compiling
    assert r.warmup_calls == 4 and not r.settled
    assert r.counters_warmup["compiles"] == 4


def test_modes_are_interleaved_sample_by_sample():
    clock = FakeClock()
    log: list[str] = []
    p = Fixed(min_time=1.0, min_samples=3, max_samples=3, max_loops=1, alone_samples=0,
                 interleave="sample", switch_calls=0)
    modes = [make_mode(n, clock, log=log) for n in ("a", "b")]
    results = measure(modes, p, clock=clock)
    timed = log[-6:]  # the six timed calls come last
    assert timed == ["a", "b", "a", "b", "a", "b"]
    assert all(len(r.samples) == 3 for r in results.values())


def test_a_sample_with_a_compile_is_set_apart():
    clock = FakeClock()
    counter = {"compiles": 0}
    p = Fixed(min_time=0.0, min_samples=4, max_samples=10, max_loops=1, early_calls=4,
                 warmup_max_time=1e9)
    # call 1 is the first call, 2-5 the warm-up; call 7 compiles inside the second sample
    mode = make_mode("m", clock, compiles_on={1, 7}, counter=counter)
    r = measure([mode], p, counters=lambda: dict(counter), clock=clock)["m"]
    assert len(r.compiling_samples) == 1
    assert len(r.samples) == 4
    assert r.steady_state_compiles


def test_a_mode_that_always_compiles_stops_after_min_samples():
    clock = FakeClock()
    counter = {"compiles": 0}
    p = Fixed(min_time=10.0, min_samples=5, max_samples=100, max_loops=1,
                 warmup_max_time=20)
    mode = make_mode("m", clock, compiles_on=set(range(1, 1000)), counter=counter)
    r = measure([mode], p, counters=lambda: dict(counter), clock=clock)["m"]
    assert r.samples == [] and len(r.compiling_samples) == 5


def test_a_failing_mode_is_kept_as_a_result_and_the_others_still_run():
    clock = FakeClock()

    def boom():
        raise RuntimeError("XLA compilation failed")

    results = measure([Timed("bad", boom, lambda o: None), make_mode("good", clock)],
                      Fixed(min_time=0.0, min_samples=2, max_loops=1), clock=clock)
    assert isinstance(results["bad"].error, RuntimeError)
    assert results["bad"].error_phase == "first_call"
    assert results["good"].ok and len(results["good"].samples) >= 2


def test_short_calls_are_batched_and_per_call_time_is_divided_back():
    clock = FakeClock()
    p = Fixed(min_time=0.0, min_samples=2, max_samples=2, target_overhead=0.5)
    r = measure([make_mode("m", clock, cost=1.0)], p, clock=clock)["m"]
    # per call (2.0 - 1.0 overhead) = 1.0 -> loops = ceil(1.0 / (0.5 * 1.0)) = 2
    assert r.loops == 2
    # one sample: 2 clock reads around 2 calls of cost 1.0 -> (1 + 2) / 2 per call
    assert r.samples == [1.5, 1.5]


def test_summarize():
    s = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s["median_s"] == 3.0 and s["mean_s"] == 3.0 and s["min_s"] == 1.0
    assert s["iqr_s"] == pytest.approx(2.0)
    assert summarize([])["median_s"] is None


# ------------------------------------------------------------- interleaving schemes

def _timed_log(scheme, n_modes=2, **kw):
    clock = FakeClock()
    log: list[str] = []
    names = "abc"[:n_modes]
    kw.setdefault("switch_calls", 0)
    p = Fixed(min_time=1e9, min_samples=4, max_samples=4, max_loops=1, alone_samples=0,
              synced_time=0, interleave=scheme, early_calls=1, warmup_min_calls=1, **kw)
    modes = [make_mode(n, clock, log=log) for n in names]
    # first call + 1 warm-up call per mode (the fake clock settles at once)
    results = measure(modes, p, clock=clock)
    return log[2 * n_modes:], results


def test_block_scheme_takes_samples_in_runs_with_untimed_calls_after_each_switch():
    timed, results = _timed_log("block", block_samples=2, switch_calls=1)
    # b was warmed up last: a's first turn is a switch (1 untimed call), then 2 samples, ...
    assert timed == ["a", "a", "a", "b", "b", "b", "a", "a", "a", "b", "b", "b"]
    assert all(len(r.samples) == 4 for r in results.values())


def test_random_scheme_shuffles_each_round_with_its_seed_and_keeps_every_mode():
    timed, _ = _timed_log("random", n_modes=3, seed=3)
    rounds = [timed[i:i + 3] for i in range(0, 12, 3)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # not the same order every round
    assert timed == _timed_log("random", n_modes=3, seed=3)[0]  # reproducible


def test_abba_scheme_reverses_the_order_every_round():
    timed, results = _timed_log("abba", n_modes=3, block_samples=2, switch_calls=1)
    # rounds a b c, then c b a: c runs twice in a row there, so no untimed call between
    assert timed == ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c", "c",
                     "b", "b", "b", "a", "a", "a"]
    assert all(len(r.samples) == 4 for r in results.values())


def test_an_unknown_scheme_names_the_valid_ones():
    with pytest.raises(ValueError, match="'zigzag'; valid: sample, block, random, abba"):
        Protocol(interleave="zigzag")


# ------------------------------------------------------------- the interference check

def test_each_mode_is_measured_alone_twice_after_the_interleaved_phase():
    clock = FakeClock()
    log: list[str] = []
    p = Fixed(min_time=1e9, min_samples=3, max_samples=3, max_loops=1, alone_samples=2,
              early_calls=1, warmup_min_calls=1, interleave="sample", switch_calls=0,
              synced_time=0)
    results = measure([make_mode(n, clock, log=log) for n in ("a", "b")], p, clock=clock)
    # first call and 1 warm-up call of a, then of b; interleaved a b a b a b; then a alone
    # (1 untimed call + 2 samples), then b the same; then that round once more
    assert log[4:] == ["a", "b"] * 3 + (["a"] * 3 + ["b"] * 3) * 2
    assert all(len(r.samples) == 3 and len(r.alone_samples) == 2
               and len(r.alone_again_samples) == 2 for r in results.values())


def test_a_single_mode_has_no_interference_check():
    clock = FakeClock()
    log: list[str] = []
    p = Fixed(min_time=1e9, min_samples=3, max_samples=3, max_loops=1, alone_samples=2,
              early_calls=1, warmup_min_calls=1, synced_time=0)
    r = measure([make_mode("a", clock, log=log)], p, clock=clock)["a"]
    assert log == ["a"] * 5 and not r.alone_samples and not r.alone_again_samples


def test_a_mode_that_is_slower_interleaved_than_alone_is_flagged():
    """Mode b pays 2.0 extra on each call that follows a call of a (a spinning thread pool);
    c, like a, is left alone."""
    clock = FakeClock()
    last = [None]

    def mode(name, cost):
        def call():
            clock.spend(cost + (2.0 if name == "b" and last[0] == "a" else 0.0))
            last[0] = name
        return Timed(name, call, sync=lambda out: None)

    p = Fixed(min_time=1e9, min_samples=36, max_samples=36, max_loops=1, max_time=1e9,
                 alone_samples=9, alone_max_time=1e9, early_calls=1, warmup_min_calls=1,
                 warmup_max_time=0, interleave="sample", switch_calls=0)
    r = measure([mode("a", 1.0), mode("b", 1.0), mode("c", 1.0)], p, clock=clock)
    # a sample is 2 clock reads around one call: 1 + cost (+2 for b after a)
    assert r["a"].samples == [2.0] * 36 and r["b"].samples == [4.0] * 36
    assert r["b"].alone_samples == r["b"].alone_again_samples == [2.0] * 9
    checks = interference(r)
    assert checks["b"]["interference"] == pytest.approx(2.0) and checks["b"]["interference_flag"]
    for m in ("a", "c"):
        assert checks[m]["interference"] == pytest.approx(1.0)
        assert not checks[m]["interference_flag"]
    assert checks["a"]["interference_shared"] == pytest.approx(1.0)


def _wobbly(n: int, spread: float) -> list[float]:
    """n samples around 1.0: blocks of 5 whose medians step through 1 +- spread."""
    steps = [1.0, 1.0 + spread, 1.0 - spread, 1.0, 1.0 + spread / 2, 1.0 - spread / 2]
    return [steps[(i // 5) % len(steps)] for i in range(n)]


def _group(x_first, x_again, samples=None, others=(1.0, 1.0), n=60, spread=0.01):
    """Mode x with its blocks alone at x_first / x_again; two more modes alone at ``others``
    (their blocks in the same two rounds); all interleaved around 1.0."""
    def mr(name, first, again):
        return ModeResult(name, samples=list(samples or _wobbly(n, spread)),
                          alone_samples=[first] * 5, alone_again_samples=[again] * 5)
    return {"x": mr("x", x_first, x_again), "y": mr("y", *others), "z": mr("z", *others)}


def test_interference_is_a_shift_of_one_mode_both_its_blocks_alone_see():
    assert interference(_group(0.8, 0.8))["x"]["interference_flag"]
    assert interference(_group(1.25, 1.3))["x"]["interference_flag"]
    checks = interference(_group(0.8, 0.8))
    assert not checks["y"]["interference_flag"] and not checks["z"]["interference_flag"]
    # one block hit by a burst, the other where the interleaved samples are: not interference
    assert not interference(_group(1.0, 1.5))["x"]["interference_flag"]
    # the two blocks on opposite sides: no shift both see
    assert not interference(_group(0.8, 1.25))["x"]["interference_flag"]
    # within the tolerance (3%), however quiet the interleaved samples
    assert not interference(_group(1.02, 1.02, samples=[1.0] * 60))["x"]["interference_flag"]
    assert interference(_group(1.05, 1.05, samples=[1.0] * 60))["x"]["interference_flag"]
    # 10% away, but the interleaved blocks themselves wander +-10%: within 3 sigmas
    r = interference(_group(0.9, 0.9, spread=0.10))["x"]
    assert not r["interference_flag"] and r["interference_noise"] > 0.1
    assert interference(_group(0.5, 0.5, spread=0.10))["x"]["interference_flag"]


def test_a_shift_every_mode_shares_is_drift_not_interference():
    """The machine ran 1.6x slower while the blocks alone were taken: every mode saw it."""
    checks = interference(_group(1.6, 1.6, others=(1.6, 1.6)))
    for c in checks.values():
        assert not c["interference_flag"]
        assert c["interference"] == pytest.approx(1.0)
        assert c["interference_shared"] == pytest.approx(1 / 1.6)
    # drift and, on top of it, x 20% slower alone than the others
    x = interference(_group(1.92, 1.92, others=(1.6, 1.6)))["x"]
    assert x["interference_flag"] and x["interference"] == pytest.approx(1 / 1.2)


def test_interference_without_enough_to_compare_flags_nothing():
    few = interference(_group(2.0, 2.0, samples=[1.0] * 15))["x"]  # 3 blocks of 5
    assert few["interference_flag"] is False and "interference_noise" not in few
    assert few["alone_median_s"] == 2.0
    alone = _group(2.0, 2.0)
    alone["x"].alone_again_samples = []  # its second block failed: no check for it
    assert "x" not in interference(alone) and set(interference(alone)) == {"y", "z"}
    assert interference({"x": _group(2.0, 2.0)["x"]}) == {}  # nothing to compare with




def test_a_sample_lasts_1_ms_on_a_cpu_and_10_ms_on_a_gpu():
    p = Protocol()
    assert p.for_device("cpu") is p and p.sample_min_time == 0.001
    assert p.for_device("gpu").sample_min_time == p.gpu_sample_min_time == 0.01
    assert Protocol(gpu_sample_min_time=0.0005).for_device("gpu").sample_min_time == 0.001
    with pytest.raises(ValueError, match="sample_min_time"):
        Protocol(gpu_sample_min_time=-1)
    with pytest.raises(ValueError, match="pipeline_time"):
        Protocol(pipeline_time=-0.01)


class StillClock:
    """Moves only when the code under test spends time (reading it costs nothing)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def dispatching_mode(clock, compute, dispatch, finished_sync=1e-6):
    """A call that pipelines as JAX's do: each call costs ``compute`` of host time, and the
    sync after the last call waits ``dispatch`` more (hidden between calls back to back); a
    sync of an output already finished costs ``finished_sync``."""
    pending = []

    def call():
        clock.spend(compute)
        pending[:] = [dispatch]
        return 1

    def sync(out):
        clock.spend(pending.pop() if pending else finished_sync)

    return Timed("m", call, sync)


@pytest.mark.parametrize("dispatch, loops, floor", [
    # 0.1 ms unhidden per sync of a 0.3-ms call: 1% (PIPELINE_BIAS) of a sample takes ~32
    # calls (PIPELINE_CALLS), which the 10-ms pipeline_time also allows; 1 ms of 0.4-ms synced
    # calls would be 3
    (1e-4, 32, 3),
    # no dispatch to hide (TF on a CPU): the 1-ms floor alone
    (0.0, 4, 4),
])
def test_a_mode_whose_calls_pipeline_samples_long_enough_to_hide_its_dispatch(dispatch, loops,
                                                                               floor):
    clock = StillClock()
    r = first_and_warmup(dispatching_mode(clock, 3e-4, dispatch), Protocol(), lambda: {}, clock)
    assert r.ok and r.loops == loops
    assert r.pipeline_gap_s == pytest.approx(dispatch * (1 - 1 / 26), abs=2e-6)
    # without pipeline_time (the nightly, the A/B): every mode samples sample_min_time
    r = first_and_warmup(dispatching_mode(clock, 3e-4, dispatch),
                         Protocol(pipeline_time=None), lambda: {}, clock)
    assert r.loops == floor and r.pipeline_gap_s is None
    # a mode that runs its call before returning (TF on a CPU) is not probed
    quiet = dataclasses.replace(dispatching_mode(clock, 3e-4, dispatch), pipelines=False)
    r = first_and_warmup(quiet, Protocol(), lambda: {}, clock)
    assert r.loops == floor and r.pipeline_gap_s is None
    # a long dispatch is hidden up to pipeline_time, no longer: 8 calls probed (10 ms of
    # synced 1.3-ms calls) took 0.425 ms each back to back; 10 ms of those is 24 calls
    r = first_and_warmup(dispatching_mode(clock, 3e-4, 1e-3), Protocol(), lambda: {}, clock)
    assert r.loops == 24


@pytest.mark.unit
def test_a_groups_verdicts_read_in_a_word_and_a_number_each():
    from jitbench.run.progress import verdicts

    rows = [{"mode": "eager", "status": "ok"},
            {"mode": "jit", "status": "ok", "verdict": "faster", "verdict_baseline": "eager",
             "verdict_speedup": 11.72, "verdict_ci_low": 10.9, "verdict_ci_high": 13.2},
            {"mode": "aot", "status": "ok", "verdict": "same", "verdict_baseline": "eager",
             "verdict_speedup": 1.01, "verdict_ci_low": 0.97, "verdict_ci_high": 1.04},
            {"mode": "xla", "status": "compile_error"},
            {"mode": "donate", "status": "ok", "verdict": "slower", "verdict_baseline": "eager",
             "verdict_speedup": 0.5, "verdict_ci_low": 0.4, "verdict_ci_high": 0.625},
            {"mode": "graph", "status": "ok", "verdict": "slower", "verdict_baseline": "eager",
             "verdict_speedup": 0.5, "verdict_ci_low": float("nan"), "verdict_ci_high": 0.6}]
    assert verdicts(rows) == ("jit 11.7x faster than eager [10.9-13.2]; aot same against eager "
                              "(1.01x [0.97-1.04]); xla compile_error; donate 2x slower than "
                              "eager [1.6-2.5]; graph 2x slower than eager")
    assert verdicts(rows[:1]) == ""
