"""jax-ml/jax#36799 as a jitbench workload: a `lax.scan` whose carry is a 3x3 matrix, the
body of tinygp's quasiseparable Cholesky (`SymmQSM.cholesky`, the Matern-5/2 kernel's state),
in float32 and float64.

The report (2026-04-14): at n = 2000 the float64 scan is 10.2x slower in jax 0.9.1 than in
0.4.31 (4.4x at n = 200), float32 is not (0.67x); the reporter placed the step between 0.4.31
and 0.4.33 (the CPU thunk runtime, jaxlib 0.4.32, was pulled from PyPI) and found that
`XLA_FLAGS=--xla_cpu_use_thunk_runtime=false` undoes it in older releases only.

The scan computes the recursion of that Cholesky (one 3x3 state updated per row, the
reporter's "cholesky body"); its inputs are random (a contraction per step, so the square root
stays real), since the regression is in the scan's runtime, not in the values. The figures it
made: index.md in this folder.

    jitbench releases jax 0.4.31 0.4.33 0.5.3 0.10.2 --suite-file thunk_scan.py \\
        --suite thunk_scan --framework jax --device cpu
"""

from __future__ import annotations

from jitbench.define.workload import Workload

GRID = {"quick": [dict(n=2000)], "full": [dict(n=200), dict(n=2000)]}


def inputs(p, dtype, rng):
    import numpy as np

    n = p["n"]
    d = (2.0 + rng.random(n)).astype(dtype)
    pv = (0.3 * rng.standard_normal((n, 3))).astype(dtype)
    qv = (0.3 * rng.standard_normal((n, 3))).astype(dtype)
    a = (0.8 * np.eye(3) + 0.05 * rng.standard_normal((n, 3, 3))).astype(dtype)
    return d, pv, qv, a


def reference(xs, p, variant):
    import numpy as np

    d, pv, qv, a = xs
    f = np.zeros((3, 3))
    c, w = np.empty_like(d), np.empty_like(qv)
    for k in range(len(d)):
        c[k] = np.sqrt(d[k] - pv[k] @ f @ pv[k])
        fa = f @ a[k].T
        w[k] = (qv[k] - pv[k] @ fa) / c[k]
        f = a[k] @ fa + np.outer(w[k], w[k])
    return c, w


def _step(f, row):  # at module level: op-by-op JAX traces it once, not once a call
    import jax.numpy as jnp

    d_k, p_k, q_k, a_k = row
    c_k = jnp.sqrt(d_k - p_k @ f @ p_k)
    fa = f @ a_k.T
    w_k = (q_k - p_k @ fa) / c_k
    return a_k @ fa + jnp.outer(w_k, w_k), (c_k, w_k)


def _cholesky(d, p, q, a):
    import jax
    import jax.numpy as jnp

    init = jnp.zeros_like(jnp.outer(q[0], q[0]))
    _, (c, w) = jax.lax.scan(_step, init, (d, p, q, a))
    return c, w


WORKLOAD = Workload(
    name="thunk_scan",
    description="jax#36799: lax.scan with a 3x3 carry (tinygp's quasiseparable Cholesky)",
    grid=GRID,
    dtypes=("float32", "float64"),
    inputs=inputs,
    reference=reference,
    flops=lambda p, variant: p["n"] * (2 * 9 + 2 * 27 + 2 * 9 + 2 * 27 + 9 + 10.0),
    tolerance={"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)},
    jax=lambda p, dtype, variant: [_cholesky],
    size_label=lambda p: f"n{p['n']}",
    in_default_run=False,
)

if __name__ == "__main__":  # a workload file is loaded by jitbench, not run
    print(__doc__.strip())
    raise SystemExit(0)
