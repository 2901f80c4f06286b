"""The device sync is inside the timed region: without it, JAX (asynchronous even on CPU)
would look far faster than it is."""

from __future__ import annotations

import numpy as np
import pytest

from jitbench.protocol.timing import Protocol, Timed, measure



def test_unsynced_timing_would_be_visibly_shorter():
    pytest.importorskip("jax")
    from jitbench.frameworks import get_adapter

    adapter = get_adapter("jax")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype("float32")
    (x,) = adapter.place([a], "cpu")
    fn = adapter.build([lambda m: m @ m @ m @ m], "jit", "cpu")
    p = Protocol(min_time=0.1, min_samples=5, max_samples=20, max_loops=1)
    synced = measure([Timed("synced", lambda: fn(x), adapter.sync)], p)["synced"]
    unsynced = measure([Timed("unsynced", lambda: fn(x), lambda out: None)], p)["unsynced"]
    med = lambda r: float(np.median(r.samples))  # noqa: E731
    # three 1024³ matmuls take milliseconds; dispatching them takes microseconds
    assert med(synced) > 10 * med(unsynced), (med(synced), med(unsynced))


def test_the_planted_slowdown_scales_each_sample_and_adds_no_wait_of_its_own(monkeypatch):
    """``JITBENCH_TEST_SLOWDOWN='<glob>=x1.5'`` makes what is timed 1.5x as long and leaves the
    protocol's syncs as they are: calls that pipeline are still waited for once a sample (a wait
    per call widened the planted series' interval on one core). A fake clock: every read moves
    it on by a microsecond, a call by 2 ms."""
    import dataclasses
    import types

    from jitbench.define.workload import Case
    from jitbench.run import worker

    class Clock:
        now = 0.0

        def perf_counter(self):
            self.now += 1e-6
            return self.now

    clock = Clock()
    monkeypatch.setattr(worker, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    monkeypatch.setenv("JITBENCH_TEST_SLOWDOWN", "w-*=x1.5")
    syncs = {"plain": 0, "slowed": 0}

    def timed(name):
        def call():
            clock.now += 0.002

        def sync(out):
            syncs[name] += 1
        return Timed(name, call, sync)

    case = Case(workload="w", variant="default", size="s", params_json="{}", dtype="float32",
                framework="jax", device="cpu", mode="jit")
    plain = timed("plain")
    assert worker._slowed_for_tests(dataclasses.replace(case, workload="v"), plain) is plain
    slowed = worker._slowed_for_tests(case, timed("slowed"))
    p = Protocol(min_time=0.1, min_samples=10, max_samples=10, max_loops=4, interleave="block",
                 target_overhead=1e-9)
    results = measure([plain, slowed], p, clock=clock.perf_counter)
    assert results["slowed"].loops == results["plain"].loops == 4
    med = {k: float(np.median(r.samples)) for k, r in results.items()}
    assert med["slowed"] / med["plain"] == pytest.approx(1.5, rel=0.01), med
    assert syncs["slowed"] == syncs["plain"], syncs  # one sync a sample, as without the hook
    # several entries: the first whose glob matches the case applies
    monkeypatch.setenv("JITBENCH_TEST_SLOWDOWN", "v-*=x2;w-*=x1.5;*=x3")
    again = measure([plain, worker._slowed_for_tests(case, timed("slowed"))], p,
                    clock=clock.perf_counter)
    assert (float(np.median(again["slowed"].samples)) / float(np.median(again["plain"].samples))
            == pytest.approx(1.5, rel=0.01))
    assert worker._slowed_for_tests(dataclasses.replace(case, workload="u"), plain) is not plain
    monkeypatch.setenv("JITBENCH_TEST_SLOWDOWN", "v-*=x2;u-*=x1.5")
    assert worker._slowed_for_tests(case, plain) is plain
