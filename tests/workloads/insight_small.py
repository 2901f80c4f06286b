"""tanh(x @ x * 0.5 + 1) - x on an 8x8 matrix, for tests/test_insight.py: five ops, enough for
TF auto-clustering to form a cluster (its minimum is 4), so every JIT mode has an XLA program.
The test copies this file with ``tanh`` swapped for ``sin`` to see the fingerprint change."""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal((p["n"], p["n"])).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    x = xs[0]
    return np.tanh(x @ x * 0.5 + 1.0) - x


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    return [lambda x: tf.tanh(tf.linalg.matmul(x, x) * 0.5 + 1.0) - x]


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    return [lambda x: jnp.tanh(x @ x * 0.5 + 1.0) - x]


WORKLOAD = Workload(
    name="insight_small", description="tanh(x @ x * 0.5 + 1) - x, 8x8", grid={"quick": [{"n": 8}]},
    dtypes=("float32",), inputs=inputs, reference=reference,
    flops=lambda p, v: 2.0 * p["n"] ** 3 + 4.0 * p["n"] ** 2,
    tolerance={"float32": (1e-4, 1e-5)}, tf=tf_stages, jax=jax_stages,
    size_label=lambda p: f"n{p['n']}")
