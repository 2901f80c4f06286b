"""A user's own function, tanh(x) @ x.T of a small matrix, in the form of a file of suites/:
the `jitbench releases` tests copy it outside the repository and pass it with --suite-file.
n=128, not smaller: a call of a few µs lands in one of two process states, which widens a
planted step's interval between fresh processes."""
from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal((p["n"], p["n"])).astype(dtype),)


def reference(xs, p, variant):
    import numpy as np
    return np.tanh(xs[0]) @ xs[0].T


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp
    return [lambda x: jnp.tanh(x) @ x.T]


WORKLOAD = Workload(
    name="mine", description="my function", grid={"quick": [dict(n=128)]},
    dtypes=("float32",), inputs=inputs, reference=reference,
    flops=lambda p, v: 2.0 * p["n"] ** 3, tolerance={"float32": (1e-4, 1e-5)},
    jax=jax_stages, size_label=lambda p: f"n{p['n']}")
