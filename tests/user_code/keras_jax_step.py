"""A small Keras MLP on the JAX backend, compiled with Adam, measured by ``jitbench.measure``
(run in its own process by ``tests/test_user_functions.py``: Keras picks its backend once per
process). Prints one JSON object: the rows, the summary, and whether the model's weights and
optimizer came back as they went in."""

import json
import os

os.environ["KERAS_BACKEND"] = "jax"

import keras  # noqa: E402
import numpy as np  # noqa: E402

import jitbench  # noqa: E402

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(3)])
model.compile(optimizer=keras.optimizers.Adam(1e-2), metrics=["accuracy"],
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
x, y = rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 3, 32)
before = [w.copy() for w in model.get_weights()]
r = jitbench.measure(model, x, y, precision="off", budget=1.0)
keys = ("mode", "status", "framework", "first_call_s", "median_s", "max_rel_err_vs_nojit",
        "keras_auto", "keras_jit_compile", "keras_backend", "error")
print(json.dumps({
    "rows": [{k: row.get(k) for k in keys} for row in r.rows],
    "summary": r.summary(),
    "weights_kept": all(np.array_equal(b, w) for b, w in zip(before, model.get_weights())),
    "iterations": int(np.asarray(model.optimizer.iterations.value)),
}, default=str))
