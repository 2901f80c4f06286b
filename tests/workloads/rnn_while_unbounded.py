"""User-reported XLA failure: the gradient of an RNN through ``tf.while_loop`` *without*
``maximum_iterations`` under ``jit_compile=True`` (``suites/rnn.py`` sets it).

What TensorFlow 2.21 does (recorded by tests/test_robustness.py): eager, graph and
auto-clustering compute the right gradient; ``xla`` fails to compile with
``InvalidArgumentError: XLA compilation requires a fixed tensor list size. Set the max number
of elements. ...`` naming node ``gradient_tape/while/while/Placeholder_1_0/accumulator`` — the
loop's gradient accumulator, whose size XLA needs to know statically.
"""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    i, h = p["input"], p["hidden"]
    xs = rng.standard_normal((p["seq"], p["batch"], i)).astype(dtype)
    wx = (rng.standard_normal((i, h)) / i ** 0.5).astype(dtype)
    wh = (rng.standard_normal((h, h)) / h ** 0.5).astype(dtype)
    return xs, wx, wh


def reference(xs_in, p, variant):
    import numpy as np

    xs, wx, wh = xs_in
    hs = [np.zeros((p["batch"], p["hidden"]))]
    for x in xs:
        hs.append(np.tanh(x @ wx + hs[-1] @ wh))
    h = hs[-1]
    dh = 2.0 * h / h.size
    gwx, gwh = np.zeros_like(wx), np.zeros_like(wh)
    for t in range(len(xs), 0, -1):
        da = dh * (1.0 - hs[t] ** 2)
        gwx += xs[t - 1].T @ da
        gwh += hs[t - 1].T @ da
        dh = da @ wh.T
    return (np.array(np.mean(h * h)), gwx, gwh)


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    def forward_and_grad(xs, wx, wh):
        with tf.GradientTape() as tape:
            tape.watch([wx, wh])

            def body(t, h):
                return t + 1, tf.tanh(tf.matmul(xs[t], wx) + tf.matmul(h, wh))

            h0 = tf.zeros((p["batch"], p["hidden"]), dtype=dtype)
            # no maximum_iterations: the loop bound is a tensor, unknown to XLA
            _, h = tf.while_loop(lambda t, h: t < tf.shape(xs)[0], body, (tf.constant(0), h0))
            loss = tf.reduce_mean(h * h)
        return (loss, *tape.gradient(loss, [wx, wh]))

    return [forward_and_grad]


WORKLOAD = Workload(
    name="rnn_while_unbounded", description="RNN gradient, tf.while_loop without "
    "maximum_iterations", grid={"quick": [dict(seq=5, batch=2, input=3, hidden=4)]},
    dtypes=("float32",), variants=("forward+grad",), inputs=inputs, reference=reference,
    flops=lambda p, v: 1e3, tolerance={"float32": (1e-4, 1e-5)}, tf=tf_stages,
    size_label=lambda p: f"T{p['seq']}-B{p['batch']}",
    expected_failures={("tf", "xla"): "user-reported: XLA needs maximum_iterations to "
                                      "differentiate through tf.while_loop"})
