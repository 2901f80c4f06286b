"""Is TF eager's first call in a worker's first group one-time start-up? (issue 10, open)

    python examples/tf_eager_first_call.py

One fresh process per scenario: the worker's warm-up (8x8), then nothing / a matmul of
another shape / a 512x512 matmul / the same shape, then clear_kernel_cache, then the first
eager relu(a @ b) at 256x256 timed. Measured: ~1.5-2.2 ms in every scenario, while a worker's
first group pays 4-8 ms for the same call (examples/first_call_position.py).
"""
import json
import subprocess
import sys

CODE = r'''
import sys, time, json, numpy as np, tensorflow as tf
from tensorflow.python.eager import context
pre = sys.argv[1]
w = tf.constant(np.ones((8, 8), np.float32))
for _ in range(3): tf.reduce_sum(tf.tanh(tf.matmul(w, w) * 0.5 + 1.0) - w)
a = tf.identity(tf.constant(np.random.rand(256, 256).astype(np.float32)))
b = tf.identity(tf.constant(np.random.rand(256, 256).astype(np.float32)))
if pre == "other-shape":
    c = tf.constant(np.random.rand(256, 128).astype(np.float32)); tf.nn.relu(tf.matmul(a, c))
elif pre == "big-warmup":
    c = tf.constant(np.random.rand(512, 512).astype(np.float32)); tf.nn.relu(tf.matmul(c, c))
elif pre == "same-shape":
    tf.nn.relu(tf.matmul(b, a))
tf.test.experimental.sync_devices()
context.context().clear_kernel_cache()
t = time.perf_counter(); y = tf.nn.relu(tf.matmul(a, b)); tf.test.experimental.sync_devices()
first = time.perf_counter() - t
t = time.perf_counter(); y = tf.nn.relu(tf.matmul(a, b)); tf.test.experimental.sync_devices()
print(json.dumps([first, time.perf_counter() - t]))
'''
for pre in ["none", "other-shape", "big-warmup", "same-shape"]:
    res = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", CODE, pre], capture_output=True, text=True)
        res.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(pre, "first ms", [round(r[0] * 1e3, 2) for r in res],
          "second ms", [round(r[1] * 1e3, 2) for r in res])
