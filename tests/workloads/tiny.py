"""A well-behaved tiny workload: tanh(x) at six sizes (six case groups per framework), for the
robustness tests' "the other cases are still ok" and the interrupt / resume test."""

from __future__ import annotations

from jitbench.define.workload import Workload

GRID = {"quick": [dict(n=n) for n in (4, 8, 16, 32, 64, 128)]}


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    return np.tanh(xs[0])


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    return [tf.tanh]


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    return [jnp.tanh]


WORKLOAD = Workload(
    name="tiny", description="tanh(x), tiny", grid=GRID, dtypes=("float32",), inputs=inputs,
    reference=reference, flops=lambda p, v: float(p["n"]), tolerance={"float32": (1e-5, 1e-6)},
    tf=tf_stages, jax=jax_stages, size_label=lambda p: f"n{p['n']}")
