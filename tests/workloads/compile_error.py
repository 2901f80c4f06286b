"""JIT compile errors, one per framework; every JIT-off mode still works:

- TF: ``tf.numpy_function`` (op ``PyFunc``) has no XLA kernel, so ``jit_compile=True`` fails
  ("Detected unsupported operations ... PyFunc"); auto-clustering leaves it out of clusters.
- JAX: a Python ``if`` on a traced value raises ``TracerBoolConversionError`` (a
  ``ConcretizationTypeError``) under ``jax.jit``; op-by-op it is a concrete value.
"""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    return np.tanh(xs[0])


def tf_stages(p, dtype, variant):
    import numpy as np
    import tensorflow as tf

    def fn(x):
        y = tf.numpy_function(np.tanh, [x], tf.float32, stateful=False)
        return tf.ensure_shape(y, x.shape)

    return [fn]


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    def fn(x):
        if jnp.sum(x) > -1e30:  # Python control flow on a traced value under jax.jit
            return jnp.tanh(x)
        return x

    return [fn]


WORKLOAD = Workload(
    name="compile_error", description="an op XLA cannot compile (TF), Python if on a tracer "
    "(JAX)", grid={"quick": [dict(n=8)]}, dtypes=("float32",), inputs=inputs,
    reference=reference, flops=lambda p, v: 8.0, tolerance={"float32": (1e-5, 1e-6)},
    tf=tf_stages, jax=jax_stages, size_label=lambda p: f"n{p['n']}",
    expected_failures={("tf", "xla"): "test workload: tf.numpy_function has no XLA kernel",
                       ("jax", "jit"): "test workload: Python if on a traced value"})
