"""Interleaving in a plain loop: the Keras graph step in 0.25-s blocks alone, beside its xla
form, beside a second tf.function of itself, or both (8 rounds).

    python docs/lab/measure-vs-loop/keras_interleave_loop.py
"""
import statistics, sys, time
import tensorflow as tf
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)
model, (xn, yn), loops, sync, modes = steps.keras_model()
x, y = tf.constant(xn), tf.constant(yn)
g = tf.function(lambda a, b: model.train_step((a, b)))
g2 = tf.function(lambda a, b: model.train_step((a, b)))
xl = tf.function(lambda a, b: model.train_step((a, b)), jit_compile=True)
for f in (g, g2, xl):
    for _ in range(20): f(x, y)
def block(f, secs=0.25):
    ts = []
    end = time.perf_counter() + secs
    f(x, y)  # switch call
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        for _ in range(8): f(x, y)
        sync(None); ts.append((time.perf_counter() - t0) / 8)
    return ts
res = {"graph alone": [], "graph beside xla": [], "graph beside its twin": [], "graph beside both": []}
for r in range(8):
    for k in (list(res) if r % 2 == 0 else list(res)[::-1]):
        ts = []
        for _ in range(6):
            ts += block(g)
            if "xla" in k or "both" in k: block(xl)
            if "twin" in k or "both" in k: block(g2)
        res[k].append(statistics.median(ts))
for k, v in res.items():
    base = res["graph alone"]
    print(f"{k:24s} {statistics.median(v)*1e3:.3f} ms  / alone per round: median {statistics.median([a/b for a,b in zip(v, base)]):.3f} range [{min(a/b for a,b in zip(v, base)):.3f}, {max(a/b for a,b in zip(v, base)):.3f}]")
