"""The Keras graph step (a plain ``tf.function``, alone) timed three ways in turn, each between
two plain loops of it (the loop's time: their mean): jitbench's protocol (sequential stopping,
3-s budget); the same pattern written out by hand (0.25-s blocks of 10-ms samples, each sample
whole calls and a sync, one untimed call a block; the median sample); and one long run of calls
back to back timed per sample but never synced in between (the loop's pattern, cut into
10-ms pieces by the clock). The order reversed every round.

    python docs/lab/keras-graph-step/keras_graph_sampling_vs_protocol.py [ROUNDS]
"""
import statistics
import sys
import time


from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
BUDGET, BLOCK_S, SAMPLE_S = 3.0, 0.25, 0.01
model, _, (x, y), fns, sync = steps.keras_functions()
g = fns["graph"]
CALLS = userloop.calls_per_sample(lambda: g(x, y), sync, SAMPLE_S)


def protocol():
    r = protocol_measure([Timed("graph", lambda: g(x, y), sync)], Protocol(budget=BUDGET))
    return statistics.median(r["graph"].samples)


def by_hand():
    samples, end = [], time.perf_counter() + BUDGET / 2
    while time.perf_counter() < end:
        sync(g(x, y))
        block_end = time.perf_counter() + BLOCK_S
        while time.perf_counter() < block_end:
            s = time.perf_counter()
            for _ in range(CALLS):
                out = g(x, y)
            sync(out)
            samples.append((time.perf_counter() - s) / CALLS)
    return statistics.median(samples)


def unsynced():
    samples, end = [], time.perf_counter() + BUDGET / 2
    s = time.perf_counter()
    while s < end:
        for _ in range(CALLS):
            g(x, y)
        now = time.perf_counter()
        samples.append((now - s) / CALLS)
        s = now
    sync(None)
    return statistics.median(samples)


V = {"protocol": protocol, "by hand, synced samples": by_hand,
     "back to back, unsynced": unsynced}
res = userloop.between_loops(V, ROUNDS, lambda: g(x, y), sync)
print(f"{ROUNDS} rounds, {CALLS} calls a sample; the graph step's time / the loop's")
userloop.print_ratios(res)
