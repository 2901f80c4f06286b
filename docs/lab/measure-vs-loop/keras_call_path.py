"""The Keras step's graph/xla callables jitbench.measure samples (captured from it), in a plain
loop of 300 beside a plain tf.function of the same step, 8 rounds alternating.

    python docs/lab/measure-vs-loop/keras_call_path.py
"""
import statistics, sys, time
import jitbench
import tensorflow as tf
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps, spy  # noqa: E402

usage(__doc__)
model, (xn, yn), loops, sync, modes = steps.keras_model()
x, y = tf.constant(xn), tf.constant(yn)
plain = {m: tf.function(lambda a, b: model.train_step((a, b)), jit_compile=(m == "xla")) for m in modes}
with spy.captured() as captured:
    res0 = jitbench.measure(model, xn, yn, modes=list(modes), budget=3)
def loop(call, n=300):
    for _ in range(20): call()
    tf.test.experimental.sync_devices()
    t0 = time.perf_counter()
    for _ in range(n): call()
    tf.test.experimental.sync_devices()
    return (time.perf_counter() - t0) / n
res = {}
for r in range(8):
    for m in modes:
        pair = [("plain", lambda f=plain[m]: f(x, y)), ("jitbench call", captured[m].call)]
        for k, call in (pair if r % 2 == 0 else pair[::-1]):
            res.setdefault((m, k), []).append(loop(call))
for (m, k), v in res.items():
    base = res[(m, "plain")]
    print(f"{m} {k:14s} {statistics.median(v)*1e3:.3f} ms ratio median {statistics.median([a/b for a,b in zip(v,base)]):.3f} [{min(a/b for a,b in zip(v,base)):.3f}, {max(a/b for a,b in zip(v,base)):.3f}]")
