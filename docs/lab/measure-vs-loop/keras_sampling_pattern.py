"""The Keras graph step's Timed (captured from jitbench.measure) sampled as the protocol samples
it (7 calls and a sync a sample, with and without the counters read around each, or 1 call a
sample) against a plain loop of it, 8 rounds alternating; and the cost of one
tf.test.experimental.sync_devices().

    python docs/lab/measure-vs-loop/keras_sampling_pattern.py
"""
import statistics, sys, time
import jitbench
import tensorflow as tf
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps, spy  # noqa: E402

usage(__doc__)
model, (xn, yn), loops, sync, modes = steps.keras_model()
with spy.captured() as captured:
    jitbench.measure(model, xn, yn, modes=list(modes), budget=3)
counters = captured["counters"]
g = captured["graph"]
def sampled(with_counters, loops_per=7, secs=1.0):
    ts = []
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        if with_counters: counters()
        t0 = time.perf_counter()
        for _ in range(loops_per): out = g.call()
        g.sync(out)
        ts.append((time.perf_counter() - t0) / loops_per)
        if with_counters: counters()
    return statistics.median(ts)
res = {}
for r in range(8):
    ks = [("loop", lambda: userloop.loop_time(g.call, g.sync, 300)), ("samples", lambda: sampled(False)), ("samples+counters", lambda: sampled(True)), ("samples of 1", lambda: sampled(False, 1))]
    for k, f in (ks if r % 2 == 0 else ks[::-1]):
        res.setdefault(k, []).append(f())
for k, v in res.items():
    print(f"{k:18s} {statistics.median(v)*1e3:.3f} ms  / loop {statistics.median([a/b for a, b in zip(v, res['loop'])]):.3f} [{min(a/b for a, b in zip(v, res['loop'])):.3f}, {max(a/b for a, b in zip(v, res['loop'])):.3f}]")
t0 = time.perf_counter()
for _ in range(200): tf.test.experimental.sync_devices()
print("sync_devices", (time.perf_counter() - t0) / 200 * 1e6, "us")
