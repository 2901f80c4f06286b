"""A vanilla tanh RNN, float32: h_t = tanh(x_t·Wx + h_{t-1}·Wh + b), h_0 = 0.

Variants:
- ``forward``: the last hidden state h_T (batch × hidden);
- ``forward+grad``: loss = mean(h_T²) and its gradient w.r.t. Wx, Wh and b.

TF runs the loop with ``tf.while_loop(..., maximum_iterations=T)``: XLA needs that static bound
to differentiate through the loop. JAX uses ``lax.scan`` with its step function at module level
(weights in the carry), so op-by-op mode reuses the traced step instead of recompiling a fresh
closure on every call.

Recompile sweeps (``jitbench sweep --suite rnn``): ``seq``, the classic trap, one function called
with new sequence lengths and then the old ones again; ``steps-static``, the number of steps
passed as a static Python argument (``static_argnums`` in JAX) over the same inputs.

FLOPs per step: 2·B·I·H + 2·B·H·H (two matmuls) + 3·B·H (two adds, tanh as 1);
forward+grad counted as 3× forward (the backward pass is about twice the forward).
"""

from __future__ import annotations

from jitbench.define.workload import Sweep, Workload, static_args


def _size(p):
    return f"T{p['seq']}-B{p['batch']}-I{p['input']}-H{p['hidden']}"


GRID = {
    "quick": [dict(seq=50, batch=32, input=64, hidden=128)],
    "full": [dict(seq=50, batch=32, input=64, hidden=128),
             dict(seq=100, batch=64, input=128, hidden=512)],
}


def inputs(p, dtype, rng):
    i, h = p["input"], p["hidden"]
    xs = rng.standard_normal((p["seq"], p["batch"], i)).astype(dtype)
    wx = (rng.standard_normal((i, h)) / i ** 0.5).astype(dtype)
    wh = (rng.standard_normal((h, h)) / h ** 0.5).astype(dtype)
    b = (rng.standard_normal(h) * 0.1).astype(dtype)
    return xs, wx, wh, b


def reference(xs_in, p, variant):
    import numpy as np

    xs, wx, wh, b = xs_in
    hs = [np.zeros((p["batch"], p["hidden"]))]
    for x in xs:
        hs.append(np.tanh(x @ wx + hs[-1] @ wh + b))
    h = hs[-1]
    if variant == "forward":
        return h
    loss = np.mean(h * h)
    dh = 2.0 * h / h.size
    gwx, gwh, gb = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
    for t in range(len(xs), 0, -1):  # backpropagation through time
        da = dh * (1.0 - hs[t] ** 2)
        gwx += xs[t - 1].T @ da
        gwh += hs[t - 1].T @ da
        gb += da.sum(0)
        dh = da @ wh.T
    return (np.array(loss), gwx, gwh, gb)


def flops(p, variant):
    b, i, h = p["batch"], p["input"], p["hidden"]
    fwd = p["seq"] * (2.0 * b * i * h + 2.0 * b * h * h + 3.0 * b * h)
    return fwd if variant == "forward" else 3.0 * fwd


def reduction(p, variant):
    """Each step sums input + hidden terms; the weight gradients sum over time and batch."""
    step = p["input"] + p["hidden"]
    return step if variant == "forward" else max(step, p["seq"] * p["batch"])


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    def forward(xs, wx, wh, b, steps=None):
        # static: tf.function traces once per input shape (and once per Python value of steps)
        steps = xs.shape[0] if steps is None else steps
        h0 = tf.zeros((xs.shape[1], wh.shape[0]), dtype=xs.dtype)

        def body(t, h):
            return t + 1, tf.tanh(tf.matmul(xs[t], wx) + tf.matmul(h, wh) + b)

        _, h = tf.while_loop(lambda t, h: t < steps, body, (tf.constant(0), h0),
                             maximum_iterations=steps)
        return h

    if variant == "forward":
        return [forward]
    if variant == "steps-static":
        return [forward]  # steps: a trailing Python int (the sweep passes it)

    def forward_and_grad(xs, wx, wh, b):
        with tf.GradientTape() as tape:
            tape.watch([wx, wh, b])
            h = forward(xs, wx, wh, b)
            loss = tf.reduce_mean(h * h)
        return (loss, *tape.gradient(loss, [wx, wh, b]))

    return [forward_and_grad]


def _jax_step(carry, x):
    import jax.numpy as jnp

    h, wx, wh, b = carry
    return (jnp.tanh(x @ wx + h @ wh + b), wx, wh, b), None


def _jax_forward(xs, wx, wh, b):
    import jax.numpy as jnp
    from jax import lax

    h0 = jnp.zeros((xs.shape[1], wh.shape[0]), xs.dtype)
    (h, *_), _ = lax.scan(_jax_step, (h0, wx, wh, b), xs)
    return h


def _jax_loss(xs, wx, wh, b):
    h = _jax_forward(xs, wx, wh, b)
    return (h * h).mean()


def _jax_forward_steps(xs, wx, wh, b, steps):
    return _jax_forward(xs[:steps], wx, wh, b)


def jax_stages(p, dtype, variant):
    import jax

    if variant == "forward":
        return [_jax_forward]
    if variant == "steps-static":
        return [static_args(_jax_forward_steps, 4)]
    value_and_grad = jax.value_and_grad(_jax_loss, argnums=(1, 2, 3))

    def forward_and_grad(xs, wx, wh, b):
        loss, grads = value_and_grad(xs, wx, wh, b)
        return (loss, *grads)

    return [forward_and_grad]


WORKLOAD = Workload(
    name="rnn",
    description="vanilla tanh RNN, float32; forward, and forward + gradient w.r.t. the weights",
    grid=GRID,
    dtypes=("float32",),
    variants=("forward", "forward+grad"),
    inputs=inputs,
    reference=reference,
    flops=flops,
    reduction=reduction,
    tolerance={"float32": (1e-3, 1e-4)},
    tf=tf_stages,
    jax=jax_stages,
    size_label=_size,
    sweeps=(
        Sweep("seq", [dict(seq=8), dict(seq=16), dict(seq=32)], variant="forward",
              description="new sequence lengths, then the old ones again"),
        Sweep("steps-static", [dict(seq=16, steps=4), dict(seq=16, steps=8),
                               dict(seq=16, steps=16)], static=("steps",),
              variant="steps-static",
              description="number of steps as a static argument, same inputs"),
    ),
)
