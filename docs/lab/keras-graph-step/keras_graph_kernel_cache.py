"""jitbench.measure of the Keras graph step (alone) with and without the eager kernel cache
cleared first (``Adapter.reset``), beside the protocol on a plain ``tf.function``; each between
two plain loops, the order reversed every round.

    [RATIOS_JSON=out.json] python docs/lab/keras-graph-step/keras_graph_kernel_cache.py [ROUNDS]
"""
import statistics
import sys

from tensorflow.python.eager import context as tf_context  # noqa: E402

import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
model, (xn, yn), (x, y), fns, sync = steps.keras_functions()
g = fns["graph"]
ctx = tf_context.context()
clear = ctx.clear_kernel_cache


def through_measure(cleared: bool) -> float:
    ctx.clear_kernel_cache = clear if cleared else (lambda: None)
    try:
        return jitbench.measure(model, xn, yn, modes=["graph"], budget=3).rows[0]["median_s"]
    finally:
        ctx.clear_kernel_cache = clear


def through_protocol() -> float:
    r = protocol_measure([Timed("graph", lambda: g(x, y), sync)], Protocol(budget=3.0))
    return statistics.median(r["graph"].samples)


V = {"plain protocol": through_protocol, "measure": lambda: through_measure(True),
     "measure, kernel cache kept": lambda: through_measure(False)}
res = userloop.between_loops(V, ROUNDS, lambda: g(x, y), sync)
print(f"{ROUNDS} rounds; the graph step's time / the loop's")
userloop.print_ratios(res, 28)
