"""Segfaults the worker, for real, while ``jax.jit`` traces the function: the ``jit`` case must
be a ``crashed`` row naming SIGSEGV, and ``eager`` (same group) must still be measured, ok."""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    return np.tanh(xs[0])


def jax_stages(p, dtype, variant):
    import ctypes

    import jax
    import jax.numpy as jnp

    def fn(x):
        if isinstance(x, jax.core.Tracer):  # only under jax.jit
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        return jnp.tanh(x)

    return [fn]


WORKLOAD = Workload(
    name="segfault", description="SIGSEGV while jax.jit traces", grid={"quick": [dict(n=8)]},
    dtypes=("float32",), inputs=inputs, reference=reference, flops=lambda p, v: 8.0,
    tolerance={"float32": (1e-5, 1e-6)}, jax=jax_stages, size_label=lambda p: f"n{p['n']}",
    expected_failures={("jax", "jit"): "test workload: segfaults on purpose"})
