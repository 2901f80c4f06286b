"""The timing arithmetic, exactly, with a fake clock (pyperf's trick: +1.0 per read)."""

from __future__ import annotations

import itertools

import pytest

from bench.timing import (
    Protocol,
    Timed,
    first_and_warmup,
    interference,
    measure,
    median_ci,
    summarize,
)


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


def test_modes_are_interleaved_sample_by_sample():
    clock = FakeClock()
    log: list[str] = []
    p = Protocol(min_time=1.0, min_samples=3, max_samples=3, max_loops=1, alone_samples=0,
                 interleave="sample", switch_calls=0)
    modes = [make_mode(n, clock, log=log) for n in ("a", "b")]
    results = measure(modes, p, clock=clock)
    timed = log[-6:]  # the six timed calls come last
    assert timed == ["a", "b", "a", "b", "a", "b"]
    assert all(len(r.samples) == 3 for r in results.values())


def test_a_sample_with_a_compile_is_set_apart():
    clock = FakeClock()
    counter = {"compiles": 0}
    p = Protocol(min_time=0.0, min_samples=4, max_samples=10, max_loops=1, early_calls=4,
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
    p = Protocol(min_time=10.0, min_samples=5, max_samples=100, max_loops=1,
                 warmup_max_time=20)
    mode = make_mode("m", clock, compiles_on=set(range(1, 1000)), counter=counter)
    r = measure([mode], p, counters=lambda: dict(counter), clock=clock)["m"]
    assert r.samples == [] and len(r.compiling_samples) == 5


def test_a_failing_mode_is_kept_as_a_result_and_the_others_still_run():
    clock = FakeClock()

    def boom():
        raise RuntimeError("XLA compilation failed")

    results = measure([Timed("bad", boom, lambda o: None), make_mode("good", clock)],
                      Protocol(min_time=0.0, min_samples=2, max_loops=1), clock=clock)
    assert isinstance(results["bad"].error, RuntimeError)
    assert results["bad"].error_phase == "first_call"
    assert results["good"].ok and len(results["good"].samples) >= 2


def test_short_calls_are_batched_and_per_call_time_is_divided_back():
    clock = FakeClock()
    p = Protocol(min_time=0.0, min_samples=2, max_samples=2, target_overhead=0.5)
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
    p = Protocol(min_time=1e9, min_samples=4, max_samples=4, max_loops=1, alone_samples=0,
                 interleave=scheme, early_calls=1, warmup_min_calls=1, **kw)
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

def test_each_mode_is_measured_alone_after_the_interleaved_phase():
    clock = FakeClock()
    log: list[str] = []
    p = Protocol(min_time=1e9, min_samples=3, max_samples=3, max_loops=1, alone_samples=2,
                 early_calls=1, warmup_min_calls=1, interleave="sample", switch_calls=0)
    results = measure([make_mode(n, clock, log=log) for n in ("a", "b")], p, clock=clock)
    # interleaved a b a b a b, then a alone (1 untimed call + 2 samples), then b the same
    assert log[4:] == ["a", "b"] * 3 + ["a"] * 3 + ["b"] * 3
    assert all(len(r.samples) == 3 and len(r.alone_samples) == 2 for r in results.values())


def test_a_mode_that_is_slower_interleaved_than_alone_is_flagged():
    """Mode b pays 2.0 extra on each call that follows a call of a (a spinning thread pool)."""
    clock = FakeClock()
    last = [None]

    def mode(name, cost):
        def call():
            clock.spend(cost + (2.0 if name == "b" and last[0] == "a" else 0.0))
            last[0] = name
        return Timed(name, call, sync=lambda out: None)

    p = Protocol(min_time=1e9, min_samples=9, max_samples=9, max_loops=1, max_time=1e9,
                 alone_samples=9, alone_max_time=1e9, early_calls=1, warmup_min_calls=1,
                 warmup_max_time=0, interleave="sample", switch_calls=0)
    r = measure([mode("a", 1.0), mode("b", 1.0)], p, clock=clock)
    # a sample is 2 clock reads around one call: 1 + cost (+2 for b after a)
    assert r["a"].samples == [2.0] * 9 and r["b"].samples == [4.0] * 9
    assert r["b"].alone_samples == [2.0] * 9
    b = interference(r["b"].samples, r["b"].alone_samples)
    assert b["interference"] == pytest.approx(2.0) and b["interference_flag"]
    a = interference(r["a"].samples, r["a"].alone_samples)
    assert a["interference"] == pytest.approx(1.0) and not a["interference_flag"]


def test_interference_needs_both_a_separation_and_a_shift_beyond_the_tolerance():
    base = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01]
    shifted = [x * 1.02 + 0.5 for x in base]
    assert interference(base, [x + 0.5 for x in base])["interference_flag"]
    # 2% apart but the intervals overlap: noise, not interference
    assert not interference(base, [x * 1.02 for x in base])["interference_flag"]
    # intervals apart, but within the tolerance
    tight = [1.0] * 7
    assert not interference(tight, [1.02] * 7, tolerance=0.03)["interference_flag"]
    assert interference(tight, [1.05] * 7, tolerance=0.03)["interference_flag"]
    assert interference([], shifted) == {} and interference(base, []) == {}


def test_median_interval_from_order_statistics():
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)  # too few for 95%: the range
    # n = 10: P(Binom(10, 1/2) <= 1) = 0.0107 <= 0.025 < P(<= 2): ranks 2 and 9
    assert median_ci([float(i) for i in range(10, 0, -1)]) == (2.0, 9.0)
