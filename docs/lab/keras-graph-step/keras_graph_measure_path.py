"""The Keras graph step (alone) through jitbench's protocol (sequential stopping, 3-s budget)
called four ways, from the plain loop to the whole of ``jitbench.measure``, each between two
plain loops of a plain ``tf.function`` of the step (the loop's time: their mean), the order
reversed every round: a plain ``tf.function``; the TF adapter's graph callable
(``Adapter.build``: the call options and the device scope), built once, or afresh for each
measurement (a new ``tf.function``, traced and warmed up by the protocol, or first called for
1 s); the ``Timed`` that
``jitbench.measure`` samples, captured from one call of it and reused; ``jitbench.measure``
itself.

    [RATIOS_JSON=out.json] [ONLY=plain,Timed,jitbench] \
        python docs/lab/keras-graph-step/keras_graph_measure_path.py [ROUNDS]

``ONLY``: comma-separated words; a way whose name has none of them is left out.
"""
import statistics
import sys


import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps, spy  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
P = Protocol(budget=3.0)
model, (xn, yn), (x, y), fns, sync = steps.keras_functions()
g = fns["graph"]
built = steps.step_callable(model, "graph")
with spy.captured() as captured:
    jitbench.measure(model, xn, yn, modes=["graph"], budget=1)


def fresh(calls_for: float = 0.0):
    """A new callable; with ``calls_for``, called back to back that long before it is timed."""
    f = steps.step_callable(model, "graph")
    userloop.call_for(lambda: f(x, y), calls_for)
    return Timed("graph", lambda: f(x, y), sync)


def through_protocol(t):
    return statistics.median(protocol_measure([t], P)["graph"].samples)


def through_measure():
    out = jitbench.measure(model, xn, yn, modes=["graph"], budget=3)
    return out.rows[0]["median_s"]


V = {"plain tf.function": lambda: through_protocol(Timed("graph", lambda: g(x, y), sync)),
     "adapter's callable": lambda: through_protocol(Timed("graph", lambda: built(x, y), sync)),
     "adapter's callable, fresh": lambda: through_protocol(fresh()),
     "adapter's callable, fresh, 1 s of calls first": lambda: through_protocol(fresh(1.0)),
     "measure's Timed": lambda: through_protocol(captured["graph"]),
     "jitbench.measure": through_measure}
res = userloop.between_loops(userloop.only(V), ROUNDS, lambda: g(x, y), sync)
print(f"{ROUNDS} rounds; the graph step's time / the loop's")
userloop.print_ratios(res, 44)
