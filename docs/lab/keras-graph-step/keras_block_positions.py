"""The Keras graph step in 0.25-s blocks of 10-ms samples (as jitbench's sequential protocol
samples it: one untimed call after a switch, then samples of whole calls and a sync), the blocks
alternating with: the xla form's blocks, a second tf.function of the same step (its twin), an
idle pause as long, or nothing (back to back). Per condition: the median sample time over the
rounds, and by position in the block (the first sample, the second, the rest), so a switch's
cost (first samples slow) and a lasting state (every sample slow) tell apart.

    python docs/lab/keras-graph-step/keras_block_positions.py [ROUNDS]
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)


ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
BLOCK_S, SAMPLE_S, BLOCKS = 0.25, 0.01, 6
model, _, (x, y), fns, sync = steps.keras_functions()
g, twin, xl = fns["graph"], fns["twin"], fns["xla"]
CALLS = userloop.calls_per_sample(lambda: g(x, y), sync, SAMPLE_S)


def block(f):
    """[seconds per call of each sample] of one block of ``f``."""
    f(x, y)  # the untimed call after a switch
    out, end = [], time.perf_counter() + BLOCK_S
    while time.perf_counter() < end:
        s = time.perf_counter()
        for _ in range(CALLS):
            f(x, y)
        sync(None)
        out.append((time.perf_counter() - s) / CALLS)
    return out


BESIDE = {"back to back": None, "beside xla": lambda: block(xl),
          "beside its twin": lambda: block(twin),
          "beside an idle pause": lambda: time.sleep(BLOCK_S)}
res = {k: {"all": [], "first": [], "second": [], "rest": []} for k in BESIDE}
for r in range(ROUNDS):
    for k in (list(BESIDE) if r % 2 == 0 else list(BESIDE)[::-1]):
        samples = []
        for _ in range(BLOCKS):
            b = block(g)
            samples.append(b)
            if BESIDE[k]:
                BESIDE[k]()
        res[k]["all"].append(statistics.median([t for b in samples for t in b]))
        res[k]["first"].append(statistics.median([b[0] for b in samples]))
        res[k]["second"].append(statistics.median([b[1] for b in samples]))
        res[k]["rest"].append(statistics.median([t for b in samples for t in b[2:]]))
print(f"{ROUNDS} rounds, {BLOCKS} graph blocks of {BLOCK_S} s a condition, {CALLS} calls a sample")
base = res["back to back"]["all"]
for k, v in res.items():
    rel = [a / b for a, b in zip(v["all"], base)]
    pos = ", ".join(f"{p} {statistics.median(v[p]) * 1e3:.3f}" for p in ("first", "second", "rest"))
    print(f"{k:22s} {statistics.median(v['all']) * 1e3:.3f} ms; / back to back: median "
          f"{statistics.median(rel):.3f} [{min(rel):.3f}, {max(rel):.3f}]; by position (ms): {pos}")
