"""The JIT tutorials' anti-patterns as measured cases (test-only; also an example to copy).

Each variant is one JAX stage that looks harmless and compiles on every call when the harness
calls it in mode ``eager`` (the user's own ``jax.jit`` inside it is what compiles):

- ``jit-lambda-per-call``: ``jax.jit(lambda ...)`` created inside the call — a new function
  object each time, so JAX's cache (keyed on the function) never hits ("Don't do this!");
- ``jit-inside-call``: ``jax.jit(f)`` of a module-level ``f`` created inside the call — the
  tutorials' other warning; whether it recompiles is what this JAX version does, measured;
- ``scan-closure``: op-by-op ``lax.scan`` whose step is a closure created per call.

Their rows carry ``steady_state_compiles`` and JAX's own reason in ``recompile_reasons``.
"""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal(p["n"]).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np

    x = xs[0]
    if variant == "scan-closure":
        c = 0.0
        for xi in x:
            c = 0.5 * c + xi
        return np.array(c)
    return np.tanh(x) * 2.0


def _double_tanh(x):
    import jax.numpy as jnp

    return jnp.tanh(x) * 2.0


def jax_stages(p, dtype, variant):
    import jax
    import jax.numpy as jnp
    from jax import lax

    if variant == "jit-lambda-per-call":
        def stage(x):
            return jax.jit(lambda y: jnp.tanh(y) * 2.0)(x)
    elif variant == "jit-inside-call":
        def stage(x):
            return jax.jit(_double_tanh)(x)
    else:
        def stage(x):
            a = 0.5

            def step(c, xi):  # a new closure on every call
                return c * a + xi, None

            return lax.scan(step, jnp.zeros((), x.dtype), x)[0]
    return [stage]


WORKLOAD = Workload(
    name="pitfalls",
    description="JIT anti-patterns from the tutorials: jit created per call, scan closure",
    grid={"quick": [dict(n=8)]},
    dtypes=("float32",),
    variants=("jit-lambda-per-call", "jit-inside-call", "scan-closure"),
    inputs=inputs,
    reference=reference,
    flops=lambda p, v: 2.0 * p["n"],
    tolerance={"float32": (1e-5, 1e-5)},
    jax=jax_stages,
)
