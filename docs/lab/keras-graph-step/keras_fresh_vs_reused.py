"""Is a newly built graph callable of the Keras step slow itself, or is the process slow after
building one? The graph step (alone) through jitbench's protocol (sequential stopping, 3-s
budget), each way between two plain loops of a plain ``tf.function`` of the step (the loop's
time: their mean), the ways in turn, the order reversed every round:

- ``reused``: the TF adapter's graph callable built once at the start, timed every round;
- ``fresh``: one built afresh for the measurement (traced by the protocol's first call);
- ``fresh, 3 s of calls first`` / ``fresh, 3 s idle first`` (``gc.collect()``, then a sleep);
- ``reused, right after a fresh one's build``: a fresh callable built and called once (its trace),
  then the reused one timed: slow if building slows the process, not if the fresh function
  itself is slow.

    [RATIOS_JSON=out.json] [ONLY=reused,fresh] \
        python docs/lab/keras-graph-step/keras_fresh_vs_reused.py [ROUNDS]
"""
import gc
import statistics
import sys
import time
from pathlib import Path


from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
P = Protocol(budget=3.0)
model, _, (x, y), fns, sync = steps.keras_functions()


def build():
    return steps.step_callable(model, "graph")


reused = build()
for _ in range(userloop.WARM):
    reused(x, y)


def timed(f):
    return statistics.median(protocol_measure([Timed("graph", lambda: f(x, y), sync)],
                                              P)["graph"].samples)


def fresh(calls_s: float = 0.0, idle_s: float = 0.0):
    f = build()
    userloop.call_for(lambda: f(x, y), calls_s)
    if idle_s:
        gc.collect()
        time.sleep(idle_s)
    return timed(f)


def reused_after_build():
    f = build()
    f(x, y)  # its trace
    return timed(reused)


V = {"reused": lambda: timed(reused),
     "fresh": fresh,
     "fresh, 3 s of calls first": lambda: fresh(calls_s=3.0),
     "fresh, 3 s idle first": lambda: fresh(idle_s=3.0),
     "reused, right after a fresh one's build": reused_after_build}
res = userloop.between_loops(userloop.only(V), ROUNDS, lambda: fns["graph"](x, y), sync)
print(f"{ROUNDS} rounds; the graph step's time / the loop's")
userloop.print_ratios(res, 44)
