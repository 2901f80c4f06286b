"""jitbench.measure of the Keras graph step (alone) with and without the eager kernel cache
cleared first (``Adapter.reset``), beside the protocol on a plain ``tf.function``; each between
two plain loops, the order reversed every round.

    RATIOS_JSON=out.json python docs/lab/scripts/keras_graph_kernel_cache.py ROUNDS
"""
import json, os, statistics, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import measure_vs_loop as M
import tensorflow as tf
import jitbench
from tensorflow.python.eager import context as tfc
from jitbench.protocol.settings import Protocol
from jitbench.protocol.timing import Timed, measure as pm
ROUNDS = int(sys.argv[1])
model, (xn, yn), loops, sync, modes = M.keras_model()
x, y = tf.constant(xn), tf.constant(yn)
g = tf.function(lambda a, b: model.train_step((a, b)))
ctx = tfc.context()
real_clear = ctx.clear_kernel_cache
def meas(clear):
    ctx.clear_kernel_cache = real_clear if clear else (lambda: None)
    try:
        return jitbench.measure(model, xn, yn, modes=["graph"], budget=3).rows[0]["median_s"]
    finally:
        ctx.clear_kernel_cache = real_clear
V = {"plain protocol": lambda: statistics.median(pm([Timed("graph", lambda: g(x, y), sync)], Protocol(budget=3.0))["graph"].samples),
     "measure": lambda: meas(True), "measure, kernel cache kept": lambda: meas(False)}
res = {}
for r in range(ROUNDS):
    for k in (list(V) if r % 2 == 0 else list(V)[::-1]):
        b = M.loop_time(lambda: g(x, y), sync); v = V[k](); a = M.loop_time(lambda: g(x, y), sync)
        res.setdefault(k, []).append(v / ((a + b) / 2))
json.dump(res, open(os.environ["RATIOS_JSON"], "w"))
for k, v in res.items():
    print(f"{k:28s} {statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]", flush=True)
