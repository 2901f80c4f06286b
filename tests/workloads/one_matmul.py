"""One tiny relu(W @ X), one size, in TF and JAX: a run of it is two case groups, so tests of
the compilation cache and of first-call anatomy start few workers."""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal((p["n"], p["n"])).astype(dtype),
            rng.standard_normal((p["n"], p["n"])).astype(dtype))


def reference(xs, p, variant):
    import numpy as np

    return np.maximum(xs[0] @ xs[1], 0.0)


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    return [lambda w, x: tf.nn.relu(tf.linalg.matmul(w, x))]


def jax_stages(p, dtype, variant):
    import jax

    return [lambda w, x: jax.nn.relu(w @ x)]


WORKLOAD = Workload(
    name="one_matmul", description="relu(W @ X) at 32x32, one size", grid={"quick": [dict(n=32)]},
    dtypes=("float32",), inputs=inputs, reference=reference,
    flops=lambda p, v: 2.0 * p["n"] ** 3, tolerance={"float32": (1e-4, 1e-4)},
    tf=tf_stages, jax=jax_stages)
