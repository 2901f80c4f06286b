"""Calibration workload: a large float32 matmul, the machine's practical peak GFLOP/s.

Achieved GFLOP/s of a benchmark only means something against what this machine can do; numpy
alone is not a safe reference (an OpenBLAS kernel choice can halve it), so every framework
measures its own and the report takes the best. 1024³ is large enough to reach the plateau on
a CPU and quick enough (~2 GFLOP per call) to keep the calibration within seconds.
"""

from __future__ import annotations

from jitbench.define.workload import Workload

N = 1024


def inputs(p, dtype, rng):
    a = rng.standard_normal((p["n"], p["n"])).astype(dtype)
    b = rng.standard_normal((p["n"], p["n"])).astype(dtype)
    return a, b


def reference(xs, p, variant):
    a, b = xs
    return a @ b


def flops(p, variant):
    return 2.0 * p["n"] ** 3


def _tf(p, dtype, variant):
    import tensorflow as tf

    return [tf.linalg.matmul]


def _jax(p, dtype, variant):
    import jax.numpy as jnp

    return [jnp.matmul]


WORKLOAD = Workload(
    name="calibration_peak_matmul",
    description=f"peak: float32 matmul {N}x{N}x{N}",
    grid={"quick": [dict(n=N)], "full": [dict(n=N)]},
    dtypes=("float32",),
    inputs=inputs,
    reference=reference,
    flops=flops,
    # sums of 1024 products of N(0,1): |entries| ~ 32, float32 error ~ 1e-4 of that
    tolerance={"float32": (1e-3, 1e-2)},
    reduction=lambda p, variant: p["n"],  # so a GPU's TF32 products pass at their precision
    tf=_tf,
    jax=_jax,
    size_label=lambda p: f"{p['n']}x{p['n']}x{p['n']}",
)
