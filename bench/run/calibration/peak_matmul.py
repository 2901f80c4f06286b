"""Calibration workload: a large float32 matmul, the machine's practical peak GFLOP/s.

Achieved GFLOP/s of a benchmark only means something against what this machine can do; numpy
alone is not a safe reference (an OpenBLAS kernel choice can halve it), so every framework
measures its own and the report takes the best. The size reaches the plateau of each device
and keeps the calibration within seconds (:data:`N_BY_DEVICE`): 1024³ on a CPU (~2 GFLOP a
call); 8192³ on a GPU, where 1024³ is launch-bound (an H200 ran TF32 matmuls at about a tenth
of its plateau there, and within a few percent of it from 8192³ on: docs/lab/h200-first-runs/index.md).
"""

from __future__ import annotations

from jitbench.define.workload import Workload

N = 1024  # the CPU's size, and numpy's
N_BY_DEVICE = {"cpu": 1024, "gpu": 8192}


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
    grid={"quick": [dict(n=N)], "full": [dict(n=N)]},  # per device: N_BY_DEVICE
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
