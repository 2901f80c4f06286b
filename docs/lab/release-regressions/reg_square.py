"""jax-ml/jax#37465 as a jitbench workload: the sum of squared neighbour differences of a
3-D volume along each axis (a tomography regulariser), its value and its gradient, float32.

The report (2026-05-07, 256^3 float32, `%timeit` of the jitted value and gradient on a CPU):
two steps, 0.5.0 -> 0.5.3 about 1.8x slower and 0.7.2 -> 0.8.0 about 1.4x slower, some of
it won back between 0.5.3 and 0.7.2; today about 1.7x slower than 0.4.31.

The quick grid is 128^3 (8 MB, calls of milliseconds on a small CPU), the full one the
reporter's 256^3. The figures it made: index.md in this folder.

    jitbench releases jax 0.4.31 0.5.0 0.5.3 0.7.2 0.8.0 0.10.2 --suite-file reg_square.py \\
        --suite reg_square --framework jax --device cpu
"""

from __future__ import annotations

from jitbench.define.workload import Workload

GRID = {"quick": [dict(s=128)], "full": [dict(s=128), dict(s=256)]}


def inputs(p, dtype, rng):
    s = p["s"]
    return (rng.standard_normal((s, s, s)).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    (x,) = xs
    if variant == "value":
        return np.array(sum(np.sum(np.square(np.diff(x, axis=i))) for i in range(x.ndim)))
    g = np.zeros_like(x)
    for i in range(x.ndim):
        xd = np.diff(x, axis=i)
        n = x.shape[i]
        g[(slice(None),) * i + (slice(1, n),)] += 2.0 * xd
        g[(slice(None),) * i + (slice(0, n - 1),)] -= 2.0 * xd
    return g


def reg_square(x):  # the reporter's function, without its @jax.jit (jitbench adds the modes)
    import jax.numpy as jnp

    cost = 0.0
    for i in range(x.ndim):
        xd = jnp.diff(x, axis=i)
        cost += jnp.sum(jnp.square(xd))
    return cost


def jax_stages(p, dtype, variant):
    import jax

    return [reg_square if variant == "value" else jax.grad(reg_square)]


WORKLOAD = Workload(
    name="reg_square",
    description="jax#37465: sum of squared differences along each axis of a volume, and its "
                "gradient",
    grid=GRID,
    dtypes=("float32",),
    variants=("value", "grad"),
    inputs=inputs,
    reference=reference,
    flops=lambda p, variant: (3 if variant == "value" else 6) * 3.0 * p["s"] ** 3,
    reduction=lambda p, variant: 3 * p["s"] ** 3 if variant == "value" else 1,
    tolerance={"float32": (1e-4, 1e-5)},
    jax=jax_stages,
    size_label=lambda p: f"{p['s']}^3",
    in_default_run=False,
)

if __name__ == "__main__":  # a workload file is loaded by jitbench, not run
    print(__doc__.strip())
    raise SystemExit(0)
