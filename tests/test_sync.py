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
