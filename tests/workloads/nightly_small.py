"""A small JAX-only workload for the nightly's end-to-end test (tests/test_nightly.py): two
sizes of tanh(x @ w) + x, calls of ~0.05-0.5 ms, so six nightly runs take about a minute and
a 30% slowdown of one JIT mode stands well above the run-to-run noise of its speedup."""

from __future__ import annotations

from jitbench.define.workload import Workload

GRID = {"quick": [dict(n=n) for n in (128, 256)]}


def inputs(p, dtype, rng):
    n = p["n"]
    return (rng.standard_normal((n, n)).astype(dtype),
            (rng.standard_normal((n, n)) / n ** 0.5).astype(dtype))


def reference(xs, p, variant):
    import numpy as np

    x, w = xs
    return np.tanh(x @ w) + x


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    return [lambda x, w: jnp.tanh(x @ w) + x]


WORKLOAD = Workload(
    name="nightly_small", description="tanh(x @ w) + x, JAX only", grid=GRID,
    dtypes=("float32",), inputs=inputs, reference=reference,
    flops=lambda p, v: 2.0 * p["n"] ** 3, tolerance={"float32": (1e-4, 1e-5)}, jax=jax_stages,
    size_label=lambda p: f"n{p['n']}")
