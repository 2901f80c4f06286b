"""A small Keras MLP on the JAX backend, compiled with Adam, measured by ``jitbench.measure``
(run in its own process by ``tests/test_user_functions.py``: Keras picks its backend once per
process). Prints one JSON object: the rows, the summary, and whether the model's weights and
optimizer came back as they went in."""

import json
import os

os.environ["KERAS_BACKEND"] = "jax"

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import jitbench  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from keras_mlp import compiled_mlp  # noqa: E402

model, x, y = compiled_mlp()
before = [w.copy() for w in model.get_weights()]
r = jitbench.measure(model, x, y, precision="off", budget=1.0)
keys = ("mode", "status", "framework", "first_call_s", "median_s", "max_rel_err_vs_nojit",
        "keras_auto", "keras_jit_compile", "keras_backend", "error")
print(json.dumps({
    "rows": [{k: row.get(k) for k in keys} for row in r.rows],
    "summary": r.summary(),
    "weights_kept": all(np.array_equal(b, w) for b, w in zip(before, model.get_weights())),
    "iterations": int(np.asarray(model.optimizer.iterations.value)),
    # a dataset of 40 rows at batch_size 16: fit's epoch per mode, traces counted
    "fit": [{k: row.get(k) for k in ("mode", "status", "keras_fit", "keras_fit_traces")}
            for row in jitbench.measure(model, np.concatenate([x, x[:8]]), np.concatenate(
                [y, y[:8]]), batch_size=16, precision="off", budget=0.5).rows],
    "weights_kept_after_fit": all(np.array_equal(b, w)
                                  for b, w in zip(before, model.get_weights())),
}, default=str))
