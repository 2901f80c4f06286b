"""The Keras graph step in plain loops under three tf.function call options, alternating: the
default, the TF adapter's (the same with ``global_jit_level: OFF``), and a copy of the
default; prints both configs.

    python docs/lab/keras-graph-step/tf_call_options_loop.py [ROUNDS]
"""
import statistics, sys
from tensorflow.python.eager import context as tfc
from tensorflow.core.protobuf import config_pb2
import jitbench.userfn.as_workload as AW
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
model, _, (x, y), fns, sync = steps.keras_functions()
g = fns["graph"]
ctx = tfc.context()
adapter = AW.adapter_for("tf")
off = adapter._options[config_pb2.OptimizerOptions.OFF]
base = ctx.function_call_options
same = tfc.FunctionCallOptions(executor_type=base.executor_type, config_proto=config_pb2.ConfigProto.FromString(base.config_proto_serialized))
print("default config:", config_pb2.ConfigProto.FromString(base.config_proto_serialized))
print("off config:", config_pb2.ConfigProto.FromString(off.config_proto_serialized))
def with_options(o):
    def call():
        before = ctx.function_call_options
        ctx.function_call_options = o
        try: return g(x, y)
        finally: ctx.function_call_options = before
    return call
V = {"default": lambda: g(x, y), "jit level OFF (the adapter's)": with_options(off), "a copy of the default": with_options(same)}
for c in V.values():
    for _ in range(30): c()
res = {k: [] for k in V}
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
    for k in (list(V) if r % 2 == 0 else list(V)[::-1]):
        res[k].append(userloop.loop_time(V[k], sync))
base_r = res["default"]
for k, v in res.items():
    rel = [a / b for a, b in zip(v, base_r)]
    print(f"{k:30s} {statistics.median(v)*1e3:.3f} ms, / default per round: median {statistics.median(rel):.3f} [{min(rel):.3f}, {max(rel):.3f}]")
