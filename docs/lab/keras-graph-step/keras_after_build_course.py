"""Whether building a graph function of the Keras step (trace, instantiate, first call; as each
``jitbench.measure`` does) slows the process for a while: an old ``tf.function`` of the step
timed in windows of ``WINDOW`` calls for ``SECONDS`` right after such a build (the built
function never called again), after a build and a full collection of Python's garbage, or right
after nothing; the three alternate ``ROUNDS`` times. Per
window of time since the start: the median ms a call; minor page faults a call; CPU ms a call
used by this process and by everything else on the machine (``/proc/stat``).

    python docs/lab/keras-graph-step/keras_after_build_course.py [ROUNDS] [SECONDS]
"""
import gc
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)



ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
WINDOW = 40
EDGES = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
model, _, (x, y), fns, sync = steps.keras_functions()
g = fns["graph"]


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``: all but idle and iowait)."""
    with open("/proc/stat") as fh:
        f = [int(v) for v in fh.readline().split()[1:]]
    return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def build():
    f = steps.step_callable(model, "graph")
    f(x, y)
    sync(None)


def course():
    out, began = [], time.perf_counter()
    while (at := time.perf_counter() - began) < SECONDS:
        u0, busy0 = resource.getrusage(resource.RUSAGE_SELF), machine_busy()
        start = time.perf_counter()
        for _ in range(WINDOW):
            g(x, y)
        sync(None)
        per = (time.perf_counter() - start) / WINDOW
        u1, busy1 = resource.getrusage(resource.RUSAGE_SELF), machine_busy()
        own = u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime
        out.append((at, per, ((u1.ru_minflt - u0.ru_minflt) / WINDOW, own / WINDOW * 1e3,
                              (busy1 - busy0 - own) / WINDOW * 1e3)))
    return out


def build_and_collect():
    build()
    gc.collect()


BEFORE = {"after a build": build, "after a build and gc.collect()": build_and_collect,
          "after nothing": lambda: None}
res = {k: [[] for _ in EDGES[1:]] for k in BEFORE}
flt = {k: [[] for _ in EDGES[1:]] for k in BEFORE}
for r in range(ROUNDS):
    for k in (list(BEFORE) if r % 2 == 0 else list(BEFORE)[::-1]):
        BEFORE[k]()
        for at, per, f in course():
            i = next(i for i, e in enumerate(EDGES[1:]) if at < e)
            res[k][i].append(per)
            flt[k][i].append(f)
heads = [f"{a:g}-{b:g}" for a, b in zip(EDGES, EDGES[1:]) if a < SECONDS]
print(f"{ROUNDS} rounds; the old graph function, median ms a call; minor faults a call; CPU ms "
      f"a call, this process / the rest of the machine; per window of time (s)")
print(" " * 32 + "".join(f"{h:>10s}" for h in heads))
for k in BEFORE:
    print(f"{k:32s}" + "".join(f"{statistics.median(v) * 1e3:10.3f}" for v in res[k] if v))
    print(f"{'  faults':32s}" + "".join(f"{statistics.mean(f[0] for f in v):10.2f}"
                                         for v in flt[k] if v))
    print(f"{'  CPU, own / the rest':32s}" + "".join(
        f"{statistics.mean(f[1] for f in v):5.2f}/{statistics.mean(f[2] for f in v):4.2f}"
        for v in flt[k] if v))
