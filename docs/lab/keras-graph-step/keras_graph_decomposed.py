"""Where the Keras graph step's time under jitbench.measure departs from a plain loop's, in four
steps from the loop to jitbench: the protocol's own timing loop (sequential stopping, a 3-s
budget) on a plain ``tf.function`` of the step, alone and beside its xla form; then
``jitbench.measure(model, x, y)`` with the graph mode alone and beside xla. Each measurement
between two plain loops of the graph step (its time: their mean), the four in turn, the order
reversed every round.

    [RATIOS_JSON=out.json] python docs/lab/keras-graph-step/keras_graph_decomposed.py [ROUNDS]

``RATIOS_JSON``: every round's ratios written there too.
"""
import statistics
import sys


import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
P = Protocol(budget=3.0)
model, (xn, yn), (x, y), fns, sync = steps.keras_functions()
g, xl = fns["graph"], fns["xla"]
plain = {"graph": Timed("graph", lambda: g(x, y), sync),
         "xla": Timed("xla", lambda: xl(x, y), sync)}


def through_protocol(names):
    r = protocol_measure([plain[n] for n in names], P,
                         pairs=[("xla", "graph")] if len(names) > 1 else [])
    return statistics.median(r["graph"].samples)


def through_measure(names):
    out = jitbench.measure(model, xn, yn, modes=names, budget=3)
    return next(row["median_s"] for row in out.rows if row["mode"] == "graph")


V = {"protocol, graph alone": lambda: through_protocol(["graph"]),
     "protocol, graph + xla": lambda: through_protocol(["graph", "xla"]),
     "measure, graph alone": lambda: through_measure(["graph"]),
     "measure, graph + xla": lambda: through_measure(["graph", "xla"])}
res = userloop.between_loops(V, ROUNDS, lambda: g(x, y), sync)
print(f"{ROUNDS} rounds; the graph step's time / the loop's")
userloop.print_ratios(res)
