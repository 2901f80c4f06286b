"""MMD² between two samples with a multi-bandwidth Gaussian kernel.

    k(x, y) = Σ_σ exp(-‖x - y‖² / (2σ²)),  σ ∈ 19 values, log-spaced from 1e-6 to 1e6
    MMD²(X, Y) = mean k(X, X) + mean k(Y, Y) - 2 mean k(X, Y)     (biased V-statistic)

Pairwise squared distances use the expanded form ‖x‖² + ‖y‖² - 2 x·y (a matmul), as real MMD
losses do, clipped at 0. The bandwidth constants are created in the data's dtype: float32
constants against float64 data is the user-reported case where ``jit_compile=True`` failed.

Numerics, on purpose: in float32 the expanded form leaves ‖x - x‖² at ~1e-4 instead of 0, so
for the tiny bandwidths the diagonal terms of k(X, X) vanish instead of being 1. Every float32
mode is therefore ~1e-2 away from the float64 reference; the float32 tolerance says so.

Variant ``outer`` is the user-reported kernel as written in their code: the 19 ``SIGMAS`` below
used as variances, ``beta = 1 / (2 * sigmas[:, None])`` an (S, 1) matrix,
``s = beta @ reshape(dist, (1, -1))`` (an outer product done as a matmul),
``K = reshape(sum(exp(-s), 0), dist.shape)``. Variant ``default`` is the broadcast form above.

FLOPs: three n×n×d distance matmuls (2·n²·d each) + per pair and bandwidth ~3 ops and one exp
(counted as 1): ≈ 3·(2n²d) + 3·n²·(4·19).
"""

from __future__ import annotations

from jitbench.define.workload import Sweep, Workload

N_BANDWIDTHS = 19
# the user's 19 kernel widths, verbatim (variant ``outer``: used as 2·sigma, not 2·sigma²)
SIGMAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 5, 10, 15, 20, 25, 30, 35, 100, 1e3, 1e4, 1e5,
          1e6)


def _size(p):
    return f"n{p['n']}-d{p['d']}"


GRID = {
    "quick": [dict(n=256, d=64), dict(n=512, d=64)],
    "full": [dict(n=256, d=64), dict(n=1024, d=64), dict(n=2048, d=128), dict(n=4096, d=128)],
}


def _bandwidths(np_like_dtype):
    import numpy as np

    return np.logspace(-6, 6, N_BANDWIDTHS).astype(np_like_dtype)


def _inv(variant, dtype):
    """The factors multiplying ‖x - y‖² in exp(): 1/(2σ²) (default) or 1/(2σ) (outer)."""
    import numpy as np

    if variant == "outer":
        return 1.0 / (2.0 * np.asarray(SIGMAS, dtype=dtype))
    return 1.0 / (2.0 * _bandwidths(dtype) ** 2)


def inputs(p, dtype, rng):
    x = rng.standard_normal((p["n"], p["d"])).astype(dtype)
    y = (rng.standard_normal((p["n"], p["d"])) * 1.1 + 0.1).astype(dtype)
    return x, y


def reference(xs, p, variant):
    import numpy as np

    x, y = xs
    inv = _inv(variant, np.float64)

    def k(a, b, rows=64):  # exact distances (0 on the diagonal), in row blocks to bound memory
        total = 0.0
        for i in range(0, len(a), rows):
            d2 = ((a[i:i + rows, None, :] - b[None, :, :]) ** 2).sum(-1)
            total += np.exp(-d2[..., None] * inv).sum()
        return total / (len(a) * len(b))

    return np.array(k(x, x) + k(y, y) - 2.0 * k(x, y))


def flops(p, variant):
    n, d = p["n"], p["d"]
    return 3 * (2.0 * n * n * d) + 3 * n * n * (4.0 * N_BANDWIDTHS)


def tf_mmd(inv):
    """MMD² in TensorFlow with the kernel's 1/(2σ²) constants ``inv`` (a tf tensor)."""
    import tensorflow as tf

    def sqdist(a, b):
        aa = tf.reduce_sum(a * a, axis=1)[:, None]
        bb = tf.reduce_sum(b * b, axis=1)[None, :]
        return tf.maximum(aa + bb - 2.0 * tf.matmul(a, b, transpose_b=True), 0.0)

    def kernel_mean(a, b):
        d2 = sqdist(a, b)
        return tf.reduce_mean(tf.reduce_sum(tf.exp(-d2[..., None] * inv), axis=-1))

    def mmd(x, y):
        return kernel_mean(x, x) + kernel_mean(y, y) - 2.0 * kernel_mean(x, y)

    return mmd


def tf_mmd_outer(sigmas):
    """The user's kernel (variant ``outer``), with ``sigmas`` a tf tensor of shape (S,)."""
    import tensorflow as tf

    def kernel_mean(a, b):
        aa = tf.reduce_sum(a * a, axis=1)[:, None]
        bb = tf.reduce_sum(b * b, axis=1)[None, :]
        dist = tf.maximum(aa + bb - 2.0 * tf.matmul(a, b, transpose_b=True), 0.0)
        beta = 1.0 / (2.0 * sigmas[:, None])
        s = tf.matmul(beta, tf.reshape(dist, (1, -1)))
        return tf.reduce_mean(tf.reshape(tf.reduce_sum(tf.exp(-s), 0), tf.shape(dist)))

    def mmd(x, y):
        return kernel_mean(x, x) + kernel_mean(y, y) - 2.0 * kernel_mean(x, y)

    return mmd


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    if variant == "outer":
        return [tf_mmd_outer(tf.constant(SIGMAS, dtype=dtype))]
    return [tf_mmd(tf.constant(_inv(variant, dtype), dtype=dtype))]


def tf_stages_any_dtype(p, dtype, variant):
    """The default kernel with its constants cast to the inputs' dtype at trace time, so one
    function serves a dtype sweep (``tf_stages`` bakes them in the case's dtype)."""
    import tensorflow as tf

    def mmd(x, y):
        return tf_mmd(tf.constant(_inv(variant, x.dtype.as_numpy_dtype), dtype=x.dtype))(x, y)

    return [mmd]


def jax_stages(p, dtype, variant):
    import jax.numpy as jnp

    inv = jnp.asarray(_inv(variant, dtype), dtype=dtype)
    sigmas = jnp.asarray(SIGMAS, dtype=dtype)

    def sqdist(a, b):
        aa = jnp.sum(a * a, axis=1)[:, None]
        bb = jnp.sum(b * b, axis=1)[None, :]
        return jnp.maximum(aa + bb - 2.0 * a @ b.T, 0.0)

    def kernel_mean(a, b):
        if variant == "outer":
            dist = sqdist(a, b)
            s = (1.0 / (2.0 * sigmas[:, None])) @ jnp.reshape(dist, (1, -1))
            return jnp.mean(jnp.reshape(jnp.sum(jnp.exp(-s), 0), dist.shape))
        return jnp.mean(jnp.sum(jnp.exp(-sqdist(a, b)[..., None] * inv), axis=-1))

    def mmd(x, y):
        return kernel_mean(x, x) + kernel_mean(y, y) - 2.0 * kernel_mean(x, y)

    return [mmd]


WORKLOAD = Workload(
    name="mmd",
    description="MMD² with a 19-bandwidth Gaussian kernel (1e-6…1e6), float32 and float64; "
                "variant outer: the user-reported kernel as written (beta @ dist outer product)",
    grid=GRID,
    dtypes=("float32", "float64"),
    inputs=inputs,
    reference=reference,
    flops=flops,
    reduction=lambda p, variant: p["d"],  # the distances' sums; MMD's mean is in its tolerance
    # float32: the lost diagonal terms (see module docstring) move the result by up to
    # ~(number of tiny bandwidths)·2/n ≈ 0.05 at n=256. float64 has the same effect, smaller:
    # ‖x - x‖² ≈ 1e-14 against 2σ² = 2e-12 still moves exp() by ~1%, ~5e-5 on the result.
    tolerance={"float32": (2e-2, 1e-1), "float64": (1e-3, 1e-4)},
    tf=tf_stages,
    jax=jax_stages,
    size_label=_size,
    variants=("default", "outer"),
    sweeps=(
        Sweep("n", [dict(n=64, d=16), dict(n=128, d=16), dict(n=256, d=16)],
              variant="default", description="sample sizes, then the old ones again"),
        Sweep("dtype", [dict(n=64, d=16, dtype="float32"), dict(n=64, d=16, dtype="float64")],
              variant="default", builders={"tf": tf_stages_any_dtype},
              description="float32 then float64 inputs to one function"),
    ),
)
