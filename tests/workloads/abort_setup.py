"""Aborts the worker (SIGABRT, as a failed C++ CHECK does) while making the inputs, before any
mode runs: the failure belongs to no single mode, so every case of the group is a ``crashed``
row saying so, and the next group gets a fresh worker."""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    import os

    os.abort()


def reference(xs, p, variant):
    raise AssertionError("never reached")


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    return [jnp.tanh]


WORKLOAD = Workload(
    name="abort_setup", description="SIGABRT while making inputs", grid={"quick": [dict(n=8)]},
    dtypes=("float32",), inputs=inputs, reference=reference, flops=lambda p, v: 8.0,
    tolerance={"float32": (1e-5, 1e-6)}, jax=jax_stages, size_label=lambda p: f"n{p['n']}",
    expected_failures={("jax", "eager"): "test workload: aborts on purpose",
                       ("jax", "jit"): "test workload: aborts on purpose"})
