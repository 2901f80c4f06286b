"""A Keras training step as a user writes it (TensorFlow's XLA tutorial's shape: a model, Adam,
``tape.gradient`` and ``apply_gradients``), shared by ``tests/test_user_functions.py``
(``jitbench.measure``) and the user project of ``tests/test_jit_fixture.py`` (the
``jit_benchmark`` fixture), which copies this file beside its tests."""

import numpy as np
import tensorflow as tf


def keras_step(planted: float = 1.0):
    """(train_step, x, y, model, optimizer); the step updates the weights and the optimizer's
    slots every call. ``planted``: the gradients scaled under XLA only (a compiler that changes
    the answer: the update shows it, the loss it returns does not)."""
    import keras
    from tensorflow.python.ops import control_flow_util

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])
    opt = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.MeanSquaredError()

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        if control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
            grads = [g * planted for g in grads]
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(0)
    x, y = (tf.constant(rng.random(shape, np.float32)) for shape in ((32, 8), (32, 1)))
    return train_step, x, y, model, opt
