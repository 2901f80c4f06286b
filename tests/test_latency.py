"""Latency beside throughput (jitbench.protocol.latency): rounds of one synced call per mode after
the pipelined samples, their time limit, and the speedup of paired rounds; fake clocks."""

from __future__ import annotations

import pytest

from jitbench.protocol.latency import run_synced
from jitbench.results.row import latency_fields, synced_speedup
from jitbench.protocol.samples import ModeResult, Timed
from jitbench.protocol.timing import Protocol, measure

pytestmark = pytest.mark.unit  # no child process, no framework import


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def mode(name, clock, call_s, sync_s, log):
    """A call that costs ``call_s`` of host time and whose result is ready ``sync_s`` later:
    pipelined calls overlap the wait, a synced call pays both."""
    def call():
        log.append(name)
        clock.t += call_s
        return name

    def sync(out):
        clock.t += sync_s

    return Timed(name, call, sync)


def results_for(*names):
    """Modes that batched their calls (loops > 1): the synced phase calls them."""
    return {n: ModeResult(n, samples=[1.0], loops=4) for n in names}


def test_rounds_alternate_the_modes_and_stop_at_the_time_limit_after_the_minimum():
    clock, log = Clock(), []
    modes = [mode("eager", clock, 0.2, 0.1, log), mode("jit", clock, 0.05, 0.05, log)]
    res = results_for("eager", "jit")
    run_synced(modes, res, time_limit=1.0, min_rounds=2, max_rounds=100, clock=clock)
    # one untimed call each, then rounds of 0.4 s until 1 s has passed: 3 rounds
    assert log == ["eager", "jit"] * 4
    assert res["eager"].synced_samples == pytest.approx([0.3] * 3)
    assert res["jit"].synced_samples == pytest.approx([0.1] * 3)


def test_the_minimum_rounds_are_taken_even_past_the_limit_and_modes_without_samples_skip():
    clock, log = Clock(), []
    modes = [mode("a", clock, 1.0, 0.0, log), mode("b", clock, 1.0, 0.0, log)]
    res = results_for("a")
    res["b"] = ModeResult("b")  # failed or never sampled
    run_synced(modes, res, time_limit=0.001, min_rounds=5, max_rounds=100, clock=clock)
    assert len(res["a"].synced_samples) == 5 and not res["b"].synced_samples
    again = dict(results_for("a"), b=ModeResult("b"))
    run_synced(modes, again, time_limit=0, min_rounds=5, max_rounds=5, clock=clock)
    assert len(log) == 6  # time_limit 0: no synced phase at all


def test_a_mode_that_raises_keeps_its_samples_and_says_why():
    clock, log = Clock(), []
    calls = iter(range(100))

    def flaky():
        if next(calls) == 2:
            raise RuntimeError("device lost")
        return 1

    modes = [Timed("bad", flaky, lambda out: None), mode("ok", clock, 0.1, 0.0, log)]
    res = results_for("bad", "ok")
    run_synced(modes, res, time_limit=1.0, min_rounds=3, max_rounds=100, clock=clock)
    assert res["bad"].synced_error.startswith("RuntimeError: device lost")
    assert res["bad"].samples == [1.0] and len(res["ok"].synced_samples) >= 3


def test_a_mode_timed_one_call_a_sample_gives_its_samples_and_is_not_called_again():
    clock, log = Clock(), []
    modes = [mode("eager", clock, 2e-3, 1e-4, log), mode("jit", clock, 1e-4, 1e-4, log)]
    res = results_for("eager", "jit")
    res["eager"] = ModeResult("eager", samples=[2.1e-3, 2.0e-3, 2.2e-3], loops=1)
    run_synced(modes, res, time_limit=1e-3, min_rounds=3, max_rounds=100, clock=clock)
    assert res["eager"].synced_samples == [2.1e-3, 2.0e-3, 2.2e-3] and "eager" not in log
    assert len(res["jit"].synced_samples) >= 3 and res["jit"].synced_in_rounds
    f = latency_fields("jit", res, "eager")
    assert f["synced_speedup"] == pytest.approx(2.1e-3 / 2e-4)  # unpaired: each side alone


def test_synced_speedup_is_the_ratio_of_medians_with_an_interval_around_it():
    base = [3.0, 3.1, 2.9, 3.0, 3.2, 2.8, 3.0]
    jit = [1.0, 1.0, 1.1, 0.9, 1.0, 1.0, 1.0]
    s = synced_speedup(base, jit)
    assert s["speedup"] == pytest.approx(3.0)
    assert s["ci_low"] < 3.0 < s["ci_high"] and s["ci_high"] / s["ci_low"] < 1.5
    assert synced_speedup(base[:2], jit[:2]) is None  # too few rounds


def test_a_dispatch_bound_jit_mode_reads_a_smaller_synced_speedup_than_pipelined():
    """The issue's 64^3 matmul on a GPU: eager dispatch 200 us, jit 30 us of host time but a
    result 35 us later; pipelined calls hide the wait, synced calls pay it."""
    clock, log = Clock(), []
    modes = [mode("eager", clock, 200e-6, 5e-6, log), mode("jit", clock, 30e-6, 35e-6, log)]
    p = Protocol(precision=None, min_time=0.01, min_samples=5, max_samples=10,
                 alone_samples=0, synced_time=0.01, warmup_max_time=0.01)

    def run():
        return measure(modes, p, clock=clock)

    res = run()
    piped = sorted(res["eager"].samples)[2] / sorted(res["jit"].samples)[2]
    fields = latency_fields("jit", res, "eager")
    assert fields["synced_median_s"] == pytest.approx(65e-6)
    assert fields["synced_speedup"] == pytest.approx(205 / 65)
    assert fields["synced_speedup"] < piped
    assert "synced_speedup" not in latency_fields("eager", res, None)
    assert latency_fields("eager", res, None)["synced_median_s"] == pytest.approx(205e-6)
