"""How long the Keras graph step stays slow after another function ran: 2-s runs of 10-ms
samples of the graph step, each after 0.25 s of the xla form, of a second tf.function of the same
step (its twin), of an idle pause, or right after another 2-s run of itself (back to back); the
median sample time per window of time since the run began, and the process's minor page faults
and context switches per call there (``getrusage``, read around each sample).

    python docs/lab/keras-graph-step/keras_graph_time_course.py [ROUNDS]
"""
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)


ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
RUN_S, BEFORE_S, SAMPLE_S = 2.0, 0.25, 0.01
EDGES = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
model, _, (x, y), fns, sync = steps.keras_functions()
g, twin, xl = fns["graph"], fns["twin"], fns["xla"]
CALLS = userloop.calls_per_sample(lambda: g(x, y), sync, SAMPLE_S)


def usage():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_minflt, u.ru_nvcsw + u.ru_nivcsw


def run(f, secs):
    """[(seconds since the run began, seconds per call, faults per call, switches per call)] of
    each sample."""
    out, began = [], time.perf_counter()
    while (now := time.perf_counter()) - began < secs:
        f0, c0 = usage()
        for _ in range(CALLS):
            f(x, y)
        sync(None)
        end = time.perf_counter()
        f1, c1 = usage()
        out.append((now - began, (end - now) / CALLS, (f1 - f0) / CALLS, (c1 - c0) / CALLS))
    return out


BEFORE = {"back to back": lambda: run(g, RUN_S), "after xla": lambda: run(xl, BEFORE_S),
          "after its twin": lambda: run(twin, BEFORE_S),
          "after an idle pause": lambda: time.sleep(BEFORE_S)}
res = {k: [[] for _ in EDGES[1:]] for k in BEFORE}
faults = {k: [[] for _ in EDGES[1:]] for k in BEFORE}
switches = {k: [[] for _ in EDGES[1:]] for k in BEFORE}
for r in range(ROUNDS):
    for k in (list(BEFORE) if r % 2 == 0 else list(BEFORE)[::-1]):
        for _ in range(2):
            BEFORE[k]()
            for at, per, flt, sw in run(g, RUN_S):
                i = next(i for i, e in enumerate(EDGES[1:]) if at < e)
                res[k][i].append(per)
                faults[k][i].append(flt)
                switches[k][i].append(sw)
print(f"{ROUNDS} rounds x 2 runs of {RUN_S} s a condition, {CALLS} calls a sample; median ms per "
      f"call in each window of the run (s since it began)")
print(" " * 22 + "".join(f"{f'{a:g}-{b:g}':>11s}" for a, b in zip(EDGES, EDGES[1:])))
for k, bins in res.items():
    print(f"{k:22s}" + "".join(f"{statistics.median(b) * 1e3:11.3f}" for b in bins))
for what, table in (("minor page faults", faults), ("context switches", switches)):
    print(f"mean {what} per call")
    for k, bins in table.items():
        print(f"{k:22s}" + "".join(f"{statistics.mean(b):11.2f}" for b in bins))
