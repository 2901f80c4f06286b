"""The Keras graph step (a plain ``tf.function``, alone) timed three ways in turn, each between
two plain loops of it (the loop's time: their mean): jitbench's protocol (sequential stopping,
3-s budget); the same pattern written out by hand (0.25-s blocks of 10-ms samples, each sample
whole calls and a sync, one untimed call a block; the median sample); and one long run of calls
back to back timed per sample but never synced in between (the loop's pattern, cut into
10-ms pieces by the clock). The order reversed every round.

    python docs/lab/scripts/keras_graph_sampling_vs_protocol.py [ROUNDS]
"""
import statistics
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import measure_vs_loop as M  # noqa: E402
import tensorflow as tf  # noqa: E402

from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
BUDGET, BLOCK_S, SAMPLE_S = 3.0, 0.25, 0.01
model, (xn, yn), loops, sync, modes = M.keras_model()
x, y = tf.constant(xn), tf.constant(yn)
g = tf.function(lambda a, b: model.train_step((a, b)))
M.loop_time(lambda: g(x, y), sync)
t0 = time.perf_counter()
for _ in range(50):
    g(x, y)
sync(None)
CALLS = max(1, round(SAMPLE_S / ((time.perf_counter() - t0) / 50)))


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
res = {}
for r in range(ROUNDS):
    for k in (list(V) if r % 2 == 0 else list(V)[::-1]):
        before = M.loop_time(lambda: g(x, y), sync)
        v = V[k]()
        after = M.loop_time(lambda: g(x, y), sync)
        res.setdefault(k, []).append(v / ((before + after) / 2))
print(f"{ROUNDS} rounds, {CALLS} calls a sample; the graph step's time / the loop's")
for k, v in res.items():
    q = statistics.quantiles(v, n=4)
    print(f"  {k:24s} median {statistics.median(v):.3f} IQR [{q[0]:.3f}, {q[2]:.3f}] "
          f"range [{min(v):.3f}, {max(v):.3f}]", flush=True)
