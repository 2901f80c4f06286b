"""A small Keras MLP compiled with Adam, as a new user writes it, and one batch of numpy inputs
and targets: shared by ``tests/test_user_functions.py`` (TensorFlow backend) and
``tests/user_code/keras_jax_step.py`` (JAX backend, in a process of its own)."""

import numpy as np


def compiled_mlp(**compile_kw):
    """(model, x, y): 8-16-3, Adam, sparse cross-entropy from logits, accuracy tracked;
    ``compile_kw``: further arguments of ``compile`` (``steps_per_execution=2``)."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  **compile_kw)
    rng = np.random.default_rng(0)
    return model, rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 3, 32)
