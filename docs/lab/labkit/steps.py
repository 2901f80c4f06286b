"""The training steps the lab's loops and jitbench measure, each with its plain loops.

Each ``make()`` returns ``(step, args, loops, sync, modes)``: the step as a user passes it to
``jitbench.measure``, its arguments, ``{mode: a call of that mode}``, the framework's sync and
the modes in order (JIT off first). ``KERAS_HIDDEN`` and ``JAX_MLP_HIDDEN`` (environment): the
Keras and the JAX MLP's hidden widths, dash-separated (default 64: 784-64-10).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from labkit.userloop import WARM

# flax_steps: the flax linen and NNX steps the tests measure (tests/user_code/), from here
USER_CODE = Path(__file__).resolve().parents[3] / "tests" / "user_code"


def hidden_widths(variable: str) -> list[int]:
    """The hidden layer widths the environment variable ``variable`` names, dash-separated
    ("1024-1024"; default 64)."""
    return [int(h) for h in os.environ.get(variable, "64").split("-")]


def jax_mlp():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    sizes = (784, *hidden_widths("JAX_MLP_HIDDEN"), 10)
    params = [(jnp.asarray(rng.standard_normal((m, n)) / np.sqrt(m), jnp.float32),
               jnp.zeros(n, jnp.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = jnp.asarray(rng.standard_normal((128, 784)), jnp.float32)
    y = jax.nn.one_hot(rng.integers(0, 10, 128), 10)

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w + b) * y, -1))

    def update(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return [(w - 0.01 * dw, b - 0.01 * db) for (w, b), (dw, db) in zip(params, grads)]

    jitted = jax.jit(update)
    loops = {"eager": lambda: update(params, (x, y)), "jit": lambda: jitted(params, (x, y))}
    return update, (params, (x, y)), loops, jax.block_until_ready, ["eager", "jit"]


def linen():
    import jax
    import sys

    if str(USER_CODE) not in sys.path:
        sys.path.insert(0, str(USER_CODE))
    from flax_steps import linen_step

    step, state, batch = linen_step()
    jitted = jax.jit(step)
    loops = {"eager": lambda: step(state, batch), "jit": lambda: jitted(state, batch)}
    return step, (state, batch), loops, jax.block_until_ready, ["eager", "jit"]


def keras_model():
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    hidden = hidden_widths("KERAS_HIDDEN")
    model = keras.Sequential([keras.Input((784,))]
                             + [keras.layers.Dense(h, activation="relu") for h in hidden]
                             + [keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((128, 784)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, 128))
    step = lambda a, b: model.train_step((a, b))  # noqa: E731
    graph, xla = tf.function(step), tf.function(step, jit_compile=True)
    loops = {"graph": lambda: graph(x, y), "xla": lambda: xla(x, y)}
    return model, (x.numpy(), y.numpy()), loops, lambda out: tf.test.experimental.sync_devices(), \
        ["graph", "xla"]


def keras_functions():
    """The Keras step of :func:`keras_model` for the scripts that take its graph mode apart:
    (model, its batch as numpy, as tensors, ``tf.function``s of its train step: ``graph``, a
    second graph one (``twin``) and ``xla``, each called ``WARM`` times, the sync)."""
    import tensorflow as tf

    model, (xn, yn), _, sync, _ = keras_model()
    x, y = tf.constant(xn), tf.constant(yn)
    fns = {name: tf.function(lambda a, b: model.train_step((a, b)), jit_compile=(name == "xla"))
           for name in ("graph", "twin", "xla")}
    for f in fns.values():
        for _ in range(WARM):
            f(x, y)
    sync(None)
    return model, (xn, yn), (x, y), fns, sync


def step_callable(model, mode: str):
    """The TF adapter's callable of the Keras step in ``mode``, as ``jitbench.measure`` builds
    it (the call options and the device scope), called with the batch ``(x, y)``."""
    from jitbench.userfn.as_workload import adapter_for

    return adapter_for("tf").build([lambda a, b: model.train_step((a, b))], mode, "cpu")


def transformer_train():
    import jax
    from jitbench.suites import transformer

    p = transformer.GRID["quick"][0]
    x, w = transformer.inputs(p, "float32", np.random.default_rng(0))
    train = transformer.jax_stages(p, "float32", "train")[0]
    x, w = jax.device_put(x), jax.device_put(w)
    jitted = jax.jit(train)
    loops = {"eager": lambda: train(x, w), "jit": lambda: jitted(x, w)}
    return train, (x, w), loops, jax.block_until_ready, ["eager", "jit"]
