"""The Keras graph step through the protocol with plain tf.functions (beside xla, or alone under
the fixed protocol) and through jitbench.measure, each between two plain loops, 6 rounds.

    python docs/lab/measure-vs-loop/keras_protocol_vs_measure.py
"""
import statistics, sys
import jitbench
import tensorflow as tf
from jitbench.protocol.timing import measure as pmeasure, Timed
from jitbench.protocol.settings import Protocol
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
model, (xn, yn), loops, sync, modes = steps.keras_model()
x, y = tf.constant(xn), tf.constant(yn)
g = tf.function(lambda a, b: model.train_step((a, b)))
xl = tf.function(lambda a, b: model.train_step((a, b)), jit_compile=True)
sy = lambda out: tf.test.experimental.sync_devices()
def proto_both():
    r = pmeasure([Timed("graph", lambda: g(x, y), sy), Timed("xla", lambda: xl(x, y), sy)], Protocol(), pairs=[("xla", "graph")])
    return r["graph"].median if hasattr(r["graph"], "median") else statistics.median(r["graph"].samples)
def proto_alone():
    r = pmeasure([Timed("graph", lambda: g(x, y), sy)], Protocol(), pairs=[])
    return statistics.median(r["graph"].samples)
def jb():
    r = jitbench.measure(model, xn, yn, modes=["graph", "xla"], budget=3)
    return next(row["median_s"] for row in r.rows if row["mode"] == "graph")
V = {"protocol, graph+xla": proto_both, "protocol, graph alone (fixed)": proto_alone, "jitbench.measure": jb}
res = {}
for r in range(6):
    for k in (list(V) if r % 2 == 0 else list(V)[::-1]):
        b = userloop.loop_time(lambda: g(x, y), sy); v = V[k](); a = userloop.loop_time(lambda: g(x, y), sy)
        res.setdefault(k, []).append(v / ((a + b) / 2))
for k, v in res.items():
    q = statistics.quantiles(v, n=4)
    print(f"{k:30s} graph / loop median {statistics.median(v):.3f} IQR [{q[0]:.3f}, {q[2]:.3f}] range [{min(v):.3f}, {max(v):.3f}]")
