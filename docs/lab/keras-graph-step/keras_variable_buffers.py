"""The addresses of the Keras model's 2-D variables (weights and Adam slots) after graph and xla
steps, and their offset from a 64-byte boundary: whether a mode moves or misaligns them.

    python docs/lab/keras-graph-step/keras_variable_buffers.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)
model, _, (x, y), fns, sync = steps.keras_functions()
g, xl = fns["graph"], fns["xla"]
vs = [v for v in model.trainable_variables + model.optimizer.variables if len(v.shape) == 2]
def addrs():
    return [v.value.value()._numpy().ctypes.data for v in vs]
for label, f in (("graph", g), ("graph", g), ("xla", xl), ("xla", xl), ("graph", g), ("graph", g), ("graph", g)):
    f(x, y)
    a = addrs()
    print(label, [(hex(p), p % 64) for p in a])
