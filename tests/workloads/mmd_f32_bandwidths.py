"""User-reported XLA failure: an MMD Gaussian kernel whose bandwidth constants are float32
while the data is float64 (``suites/mmd.py`` makes them in the data's dtype instead).

What TensorFlow 2.21 does, in every mode (recorded by tests/test_robustness.py):
- ``eager``: ``InvalidArgumentError: cannot compute Mul as input #1 ... was expected to be a
  double tensor but is a float tensor`` at the first call;
- ``graph``, ``xla``, ``autoclustering``: ``TypeError: Input 'y' of 'Mul' Op has type float32
  that does not match type float64 of argument 'x'`` while tracing — before XLA sees anything.
So it is a ``runtime_error`` of the program in every mode, not an XLA compile error.
"""

from __future__ import annotations

from bench.workload import Workload


def _bandwidths():
    import numpy as np

    return np.logspace(-6, 6, 19).astype(np.float32)  # float32, whatever the data


def inputs(p, dtype, rng):
    x = rng.standard_normal((p["n"], p["d"])).astype(dtype)
    y = (rng.standard_normal((p["n"], p["d"])) * 1.1 + 0.1).astype(dtype)
    return x, y


def reference(xs, p, variant):
    import numpy as np

    x, y = xs
    inv = 1.0 / (2.0 * _bandwidths().astype(np.float64) ** 2)

    def k(a, b):
        d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return np.exp(-d2[..., None] * inv).sum(-1).mean()

    return np.array(k(x, x) + k(y, y) - 2.0 * k(x, y))


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    inv = tf.constant(1.0 / (2.0 * _bandwidths() ** 2))  # float32: the reported mistake

    def kernel_mean(a, b):
        aa = tf.reduce_sum(a * a, axis=1)[:, None]
        bb = tf.reduce_sum(b * b, axis=1)[None, :]
        d2 = tf.maximum(aa + bb - 2.0 * tf.matmul(a, b, transpose_b=True), 0.0)
        return tf.reduce_mean(tf.reduce_sum(tf.exp(-d2[..., None] * inv), axis=-1))

    def mmd(x, y):
        return kernel_mean(x, x) + kernel_mean(y, y) - 2.0 * kernel_mean(x, y)

    return [mmd]


_REASON = "user-reported: float32 bandwidth constants against float64 data"

WORKLOAD = Workload(
    name="mmd_f32_bandwidths", description="MMD² with float32 bandwidths on float64 data",
    grid={"quick": [dict(n=16, d=4)]}, dtypes=("float64",), inputs=inputs,
    reference=reference, flops=lambda p, v: 1e4, tolerance={"float64": (1e-3, 1e-4)},
    tf=tf_stages, size_label=lambda p: f"n{p['n']}-d{p['d']}",
    expected_failures={("tf", m): _REASON for m in ("eager", "graph", "xla", "autoclustering")})
