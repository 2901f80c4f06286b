"""Memory exhaustion, bounded: asks for a 4 TiB array, which the allocator refuses at once
(nothing is touched, so the machine never swaps):

- JAX, every mode: ``JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating ...``;
- TF, eager only: ``ResourceExhaustedError: OOM when allocating tensor ...``. TF's allocator
  waits 10 s for memory to be freed before it gives up, in every mode, so the graph modes
  compute the small answer instead (they must be ok) to keep the test short.
"""

from __future__ import annotations

from jitbench.define.workload import Workload

HUGE = 2 ** 40  # float32 elements: 4 TiB


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    return np.tanh(xs[0])


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    def fn(x):
        if tf.executing_eagerly():
            return tf.fill([HUGE], x[0])
        return tf.tanh(x)

    return [fn]


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    def fn(x):
        return jnp.broadcast_to(x[0], (HUGE,)) + 1.0  # a 4 TiB output buffer

    return [fn]


WORKLOAD = Workload(
    name="oom", description="allocates 4 TiB", grid={"quick": [dict(n=8)]},
    dtypes=("float32",), inputs=inputs, reference=reference, flops=lambda p, v: 8.0,
    tolerance={"float32": (1e-5, 1e-6)}, tf=tf_stages, jax=jax_stages,
    size_label=lambda p: f"n{p['n']}",
    expected_failures={("tf", "eager"): "test workload: allocates 4 TiB",
                       ("jax", "eager"): "test workload: allocates 4 TiB",
                       ("jax", "jit"): "test workload: allocates 4 TiB"})
