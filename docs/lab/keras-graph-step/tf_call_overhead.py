"""Per-call cost of a tiny tf.function (2x2 add) called plainly and through the TF adapter's
callables (call options and device scope; either alone), graph and xla: 6 rounds of 3000
calls each.

    python docs/lab/keras-graph-step/tf_call_overhead.py
"""
import time, statistics, sys
import numpy as np
import tensorflow as tf
import jitbench.userfn.as_workload as AW
from tensorflow.python.eager import context as tfc
from tensorflow.core.protobuf import config_pb2
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)
adapter = AW.adapter_for("tf")
x = tf.constant(np.ones((2, 2), np.float32))
f = tf.function(lambda a: a + 1.0)
built_graph = adapter.build([lambda a: a + 1.0], "graph", "cpu")
built_xla = adapter.build([lambda a: a + 1.0], "xla", "cpu")
fx = tf.function(lambda a: a + 1.0, jit_compile=True)
ctx = tfc.context()
opts = adapter._options[config_pb2.OptimizerOptions.OFF]
def with_opts(a):
    before = ctx.function_call_options
    ctx.function_call_options = opts
    try: return f(a)
    finally: ctx.function_call_options = before
def with_dev(a):
    with tf.device("/CPU:0"): return f(a)
V = {"plain": lambda: f(x), "adapter graph": lambda: built_graph(x), "options only": lambda: with_opts(x), "device only": lambda: with_dev(x), "plain xla": lambda: fx(x), "adapter xla": lambda: built_xla(x)}
for k, c in V.items():
    for _ in range(200): c()
res = {k: [] for k in V}
for r in range(6):
    for k, c in V.items():
        t0 = time.perf_counter()
        for _ in range(3000): c()
        res[k].append((time.perf_counter() - t0) / 3000 * 1e6)
for k, v in res.items(): print(f"{k:14s} {statistics.median(v):7.1f} us/call [{min(v):.1f}, {max(v):.1f}]")
