"""What users jit, on a GPU: a Keras MLP on the JAX backend (784-256-256-10, batch 128, Adam)
through ``jitbench.measure(model, x, y)``, and the flax linen ``TrainState`` + optax Adam step
and the NNX step of ``tests/user_code/flax_steps.py``; one summary and the rows' key figures
per model. usage: python docs/lab/what-users-jit/gpu_users.py (from the repository root)"""

import importlib.util
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402

import jitbench  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)

KEYS = ("mode", "status", "device", "first_call_s", "median_s", "max_rel_err_vs_nojit",
        "precision")


def show(name, r):
    print(f"== {name}: {r.summary()}")
    for row in r.rows:
        print("  ", {k: row.get(k) for k in KEYS})
    sys.stdout.flush()


def keras_mlp():
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(256, activation="relu"),
                              keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="adam", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)
    before = [w.copy() for w in model.get_weights()]
    show("keras (jax backend) MLP 784-256-256-10 b128", jitbench.measure(model, x, y))
    print("   weights kept:", all(np.array_equal(b, w)
                                  for b, w in zip(before, model.get_weights())))


def flax_steps():
    path = Path(__file__).parents[3] / "tests" / "user_code" / "flax_steps.py"
    spec = importlib.util.spec_from_file_location("flax_steps", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    step, state, batch = m.linen_step()
    show("flax linen TrainState + optax adam (20-32-10, b32)", jitbench.measure(step, state, batch))
    step, model, opt, x, y = m.nnx_step()
    show("flax nnx step (20-32-10, b32)", jitbench.measure(step, model, opt, x, y))


for part in (keras_mlp, flax_steps):
    t0 = time.time()
    try:
        part()
    except Exception as exc:  # one part's failure leaves the other's figures
        print(f"== {part.__name__} failed: {type(exc).__name__}: {exc}")
    print(f"   ({part.__name__}: {time.time() - t0:.1f} s)")
