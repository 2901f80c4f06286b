"""A 20-64-10 Keras MLP compiled with Adam, measured as fit runs it; the weights before and after.

    python docs/lab/what-users-jit/keras_model_measure.py
"""
import numpy as np, keras, jitbench
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
x = np.random.default_rng(0).standard_normal((64, 20)).astype("float32")
y = np.random.default_rng(1).integers(0, 10, 64)
before = [w.copy() for w in model.get_weights()]
r = jitbench.measure(model, x, y, budget=2)
print(r.summary())
print(r.table()[["mode","status","first_call_s","median_s","max_rel_err_vs_nojit"]])
print({k: r.rows[0].get(k) for k in ("keras_auto","keras_jit_compile","state")})
print("same weights:", all(np.array_equal(a, b) for a, b in zip(before, model.get_weights())), int(model.optimizer.iterations.numpy()))
