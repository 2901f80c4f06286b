"""The thread's tf.function call options (XLA jit level) before and after jitbench.measure of
TensorFlow modes in this process (1 after a measurement means a leak).

    python docs/lab/measure-vs-loop/tf_call_options_leak.py
"""
import numpy as np, tensorflow as tf, jitbench
from tensorflow.python.eager import context as tf_context
from tensorflow.core.protobuf import config_pb2
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)
def level():
    c = config_pb2.ConfigProto.FromString(tf_context.context().function_call_options.config_proto_serialized)
    return c.graph_options.optimizer_options.global_jit_level
print("before", level())
f = lambda x: tf.nn.relu(x @ x)
r = jitbench.measure(f, np.ones((32, 32), np.float32), modes=["graph", "xla", "autoclustering"], budget=0.3, framework="tf")
print([ (row["mode"], row["status"]) for row in r.rows])
print("after", level())
