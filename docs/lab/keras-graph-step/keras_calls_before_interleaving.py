"""Do calls before the timed phase bring the Keras graph step, interleaved with its xla form as
``jitbench.measure`` samples them, back to the loop's time? Both built afresh for each
measurement (the TF adapter's callables, traced by the protocol's first calls), through
jitbench's protocol (sequential stopping, 3-s budget), the graph mode's median between two plain
loops of a plain ``tf.function`` of the step, the ways in turn, the order reversed every round:

- ``fresh``: as ``jitbench.measure`` does (built, then the protocol);
- ``fresh, 3 s graph then 3 s xla``: each called back to back that long after both are built;
- ``fresh, 3 s xla then 3 s graph``: the same, graph last;
- ``reused``: one pair built at the start, timed every round (interleaving alone).

    [RATIOS_JSON=out.json] [ONLY=reused,fresh] \
        python docs/lab/keras-graph-step/keras_calls_before_interleaving.py [ROUNDS]
"""
import statistics
import sys
from pathlib import Path


from jitbench.define.modes import verdict_pairs  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
P = Protocol(budget=3.0)
MODES = ["graph", "xla"]
model, _, (x, y), fns, sync = steps.keras_functions()


def build() -> dict:
    return {m: steps.step_callable(model, m) for m in MODES}


def graph_time(built: dict, first: tuple[str, ...] = ()) -> float:
    for m in MODES:  # both traced before any is called at length, as the protocol's first calls
        built[m](x, y)
    for m in first:
        userloop.call_for(lambda f=built[m]: f(x, y), 3.0)
        sync(None)
    timed = [Timed(m, lambda f=built[m]: f(x, y), sync) for m in MODES]
    res = protocol_measure(timed, P, pairs=verdict_pairs("tf", MODES))
    return statistics.median(res["graph"].samples)


reused = build()
V = {"fresh": lambda: graph_time(build()),
     "fresh, 3 s graph then 3 s xla": lambda: graph_time(build(), ("graph", "xla")),
     "fresh, 3 s xla then 3 s graph": lambda: graph_time(build(), ("xla", "graph")),
     "reused": lambda: graph_time(reused)}
res = userloop.between_loops(userloop.only(V), ROUNDS, lambda: fns["graph"](x, y), sync)
print(f"{ROUNDS} rounds; the graph step's time, interleaved with xla / the loop's")
userloop.print_ratios(res, 32)
