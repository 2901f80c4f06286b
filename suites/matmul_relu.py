"""relu(W @ X) in float32: the classic "does XLA fuse the relu into the matmul" example.

Variants ("how much to JIT"):
- ``fused``: one function, relu(W @ X), jitted as a whole;
- ``split``: matmul and relu as two stages, each jitted on its own (the relu then reads the
  matmul's result back from memory).

FLOPs: 2·m·k·n for the matmul (one multiply and one add per term) + m·n for the relu.
"""

from __future__ import annotations

from jitbench.define.workload import Sweep, Workload


def _size(p):
    return f"{p['m']}x{p['k']}x{p['n']}"


GRID = {
    "quick": [dict(m=64, k=64, n=64), dict(m=256, k=256, n=256), dict(m=512, k=512, n=512)],
    "full": [dict(m=64, k=64, n=64), dict(m=256, k=256, n=256), dict(m=1024, k=1024, n=1024),
             dict(m=2048, k=2048, n=2048),
             # the classic tutorial shape: W 1000x10000, X 10000x20000 (0.8 GB of float32)
             dict(m=1000, k=10000, n=20000)],
}


def inputs(p, dtype, rng):
    w = rng.standard_normal((p["m"], p["k"])).astype(dtype)
    x = rng.standard_normal((p["k"], p["n"])).astype(dtype)
    return w, x


def reference(xs, p, variant):
    import numpy as np

    w, x = xs
    return np.maximum(w @ x, 0.0)


def flops(p, variant):
    return 2.0 * p["m"] * p["k"] * p["n"] + p["m"] * p["n"]


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    if variant == "split":
        return [tf.linalg.matmul, tf.nn.relu]
    return [lambda w, x: tf.nn.relu(tf.linalg.matmul(w, x))]


def jax_stages(p, dtype, variant):
    import jax
    import jax.numpy as jnp

    if variant == "split":
        return [jnp.matmul, jax.nn.relu]
    return [lambda w, x: jax.nn.relu(w @ x)]


WORKLOAD = Workload(
    name="matmul_relu",
    description="relu(W @ X), float32; fused vs split (matmul and relu jitted apart)",
    grid=GRID,
    dtypes=("float32",),
    variants=("fused", "split"),
    inputs=inputs,
    reference=reference,
    flops=flops,
    reduction=lambda p, variant: p["k"],
    # float32 sums of k products of N(0,1) values: error grows ~sqrt(k)·eps·|terms|
    tolerance={"float32": (1e-3, 1e-3)},
    tf=tf_stages,
    jax=jax_stages,
    size_label=_size,
    sweeps=(Sweep("size", [dict(m=s, k=s, n=s) for s in (32, 64, 128)], variant="fused",
                  description="square sizes, then the old ones again"),),
)
