"""Hangs while ``jax.jit`` traces the function (a 300 s sleep: bounded even if nothing kills
it). Run with a short ``--case-timeout``: the ``jit`` case must be a ``timeout`` row, ``eager``
measured again in a fresh worker, ok."""

from __future__ import annotations

from jitbench.define.workload import Workload

HANG_S = 300


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    return np.tanh(xs[0])


def jax_stages(p, dtype, variant):
    import time

    import jax
    import jax.numpy as jnp

    def fn(x):
        if isinstance(x, jax.core.Tracer):  # only under jax.jit
            time.sleep(HANG_S)
        return jnp.tanh(x)

    return [fn]


WORKLOAD = Workload(
    name="hang", description="hangs while jax.jit traces", grid={"quick": [dict(n=8)]},
    dtypes=("float32",), inputs=inputs, reference=reference, flops=lambda p, v: 8.0,
    tolerance={"float32": (1e-5, 1e-6)}, jax=jax_stages, size_label=lambda p: f"n{p['n']}",
    expected_failures={("jax", "jit"): "test workload: hangs on purpose"})
