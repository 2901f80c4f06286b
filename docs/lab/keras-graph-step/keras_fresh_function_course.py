"""How long a freshly built graph function of the Keras step stays slower than an old one: for
each of ``BUILDS`` fresh builds (the TF adapter's graph callable, as ``jitbench.measure`` builds
it, or a plain ``tf.function``), windows of ``WINDOW`` calls alternate between the fresh
function and an old one (called ``OLD_CALLS`` times first) for ``SECONDS``; the ratio fresh /
old of each window pair, median over the builds, per window of time since the build.

    python docs/lab/keras-graph-step/keras_fresh_function_course.py [BUILDS] [SECONDS]
"""
import statistics
import sys
import time

import tensorflow as tf  # noqa: E402
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)


BUILDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
WINDOW, OLD_CALLS = 40, 3000
EDGES = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
model, _, (x, y), fns, sync = steps.keras_functions()
old = {"adapter's callable": steps.step_callable(model, "graph"),
       "plain tf.function": fns["graph"]}
for f in old.values():
    for _ in range(OLD_CALLS):
        f(x, y)
sync(None)


def build(kind):
    if kind == "adapter's callable":
        return steps.step_callable(model, "graph")
    return tf.function(lambda a, b: model.train_step((a, b)))


def window(f):
    start = time.perf_counter()
    for _ in range(WINDOW):
        f(x, y)
    sync(None)
    return (time.perf_counter() - start) / WINDOW


res = {kind: [[] for _ in EDGES[1:]] for kind in old}
for b in range(BUILDS):
    for kind in (list(old) if b % 2 == 0 else list(old)[::-1]):
        fresh = build(kind)
        fresh(x, y)  # trace, instantiate, first run
        began = time.perf_counter()
        k = 0
        while (at := time.perf_counter() - began) < SECONDS:
            pair = (window(fresh), window(old[kind])) if k % 2 == 0 else \
                tuple(reversed((window(old[kind]), window(fresh))))
            i = next(i for i, e in enumerate(EDGES[1:]) if at < e)
            res[kind][i].append(pair[0] / pair[1])
            k += 1
print(f"{BUILDS} builds of each, windows of {WINDOW} calls alternating for {SECONDS:g} s; "
      f"fresh / old, median per window of time since the build (s)")
print(" " * 20 + "".join(f"{f'{a:g}-{b:g}':>10s}" for a, b in zip(EDGES, EDGES[1:])
                         if a < SECONDS))
for kind, bins in res.items():
    print(f"{kind:20s}" + "".join(f"{statistics.median(v):10.3f}" for v in bins if v))
