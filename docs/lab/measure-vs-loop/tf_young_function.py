"""A freshly made tf.function of the Keras step against one called 3000 times before, in
alternating windows of 100 calls (3 repetitions): does a young graph function run slower?

    python docs/lab/measure-vs-loop/tf_young_function.py
"""
import sys, time
import tensorflow as tf
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)
model, (xn, yn), loops, sync, modes = steps.keras_model()
x, y = tf.constant(xn), tf.constant(yn)
old = tf.function(lambda a, b: model.train_step((a, b)))
for _ in range(3000): old(x, y)
def windows(f, n=1500, w=100):
    out = []
    for k in range(n // w):
        t0 = time.perf_counter()
        for _ in range(w): f(x, y)
        out.append((time.perf_counter() - t0) / w * 1e3)
    return out
for rep in range(3):
    young = tf.function(lambda a, b: model.train_step((a, b)))
    young(x, y)
    yw, ow = [], []
    for k in range(15):  # alternate windows of 100 calls: young, old
        yw += windows(young, 100); ow += windows(old, 100)
    print("young/old per window of 100 calls:", " ".join(f"{a/b:.2f}" for a, b in zip(yw, ow)))
