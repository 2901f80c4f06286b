"""jitbench.measure beside the loop a user would write, alternating, in one process.

For each step: a round measures it with ``jitbench.measure`` (its ``median_s``: pipelined
samples) and then times a plain loop (``CALLS`` calls back to back, one sync at the end,
after ``WARM`` warm calls), then the other way round in the next round. Prints, per step and
mode, the ratio jitbench / loop per round, its median and range, and each side's verdict
(JIT-on time / JIT-off time) so the two can be compared.

    python docs/lab/scripts/measure_vs_loop.py [ROUNDS] [SAMPLE_MIN_TIME]

``SAMPLE_MIN_TIME``: the protocol's shortest sample in seconds (default: the protocol's own).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

import jitbench
from jitbench.protocol.settings import Protocol

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
PROTOCOL = (Protocol(sample_min_time=float(sys.argv[2])) if len(sys.argv) > 2 else Protocol())
CALLS, WARM = 200, 20
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "user_code"))


def loop_time(call, sync, calls=CALLS) -> float:
    for _ in range(WARM):
        out = call()
    sync(out)
    start = time.perf_counter()
    for _ in range(calls):
        out = call()
    sync(out)
    return (time.perf_counter() - start) / calls


def jax_mlp():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    sizes = (784, 64, 10)
    params = [(jnp.asarray(rng.standard_normal((m, n)) / np.sqrt(m), jnp.float32),
               jnp.zeros(n, jnp.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = jnp.asarray(rng.standard_normal((128, 784)), jnp.float32)
    y = jax.nn.one_hot(rng.integers(0, 10, 128), 10)

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w + b) * y, -1))

    def update(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return [(w - 0.01 * dw, b - 0.01 * db) for (w, b), (dw, db) in zip(params, grads)]

    jitted = jax.jit(update)
    loops = {"eager": lambda: update(params, (x, y)), "jit": lambda: jitted(params, (x, y))}
    return update, (params, (x, y)), loops, jax.block_until_ready, ["eager", "jit"]


def linen():
    import jax
    from flax_steps import linen_step

    step, state, batch = linen_step()
    jitted = jax.jit(step)
    loops = {"eager": lambda: step(state, batch), "jit": lambda: jitted(state, batch)}
    return step, (state, batch), loops, jax.block_until_ready, ["eager", "jit"]


def keras_model():
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((128, 784)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, 128))
    graph = tf.function(lambda: model.train_step((x, y)))
    xla = tf.function(lambda: model.train_step((x, y)), jit_compile=True)
    loops = {"graph": graph, "xla": xla}
    return model, (x.numpy(), y.numpy()), loops, lambda out: tf.test.experimental.sync_devices(), \
        ["graph", "xla"]


def main() -> None:
    print(f"rounds {ROUNDS}, loop {CALLS} calls after {WARM}, sample_min_time "
          f"{PROTOCOL.sample_min_time:g} s")
    for label, make in (("jax MLP update 784-64-10", jax_mlp), ("flax linen step", linen),
                        ("keras train_step", keras_model)):
        fn, args, loops, sync, modes = make()
        ratios = {m: [] for m in modes}
        harness_v, loop_v = [], []
        for r in range(ROUNDS):
            order = ("measure", "loop") if r % 2 == 0 else ("loop", "measure")
            got: dict[str, dict[str, float]] = {}
            for side in order:
                if side == "measure":
                    res = jitbench.measure(fn, *args, modes=modes, budget=3, protocol=PROTOCOL)
                    got["measure"] = {row["mode"]: row["median_s"] for row in res.rows}
                else:
                    got["loop"] = {m: loop_time(loops[m], sync) for m in modes}
            for m in modes:
                ratios[m].append(got["measure"][m] / got["loop"][m])
            harness_v.append(got["measure"][modes[0]] / got["measure"][modes[1]])
            loop_v.append(got["loop"][modes[0]] / got["loop"][modes[1]])
        print(f"\n{label}")
        for m in modes:
            rs = ratios[m]
            print(f"  {m:6s} measure/loop median {statistics.median(rs):.3f} "
                  f"range [{min(rs):.3f}, {max(rs):.3f}]")
        print(f"  speedup {modes[1]} vs {modes[0]}: measure median "
              f"{statistics.median(harness_v):.2f}x [{min(harness_v):.2f}, {max(harness_v):.2f}]"
              f", loop median {statistics.median(loop_v):.2f}x [{min(loop_v):.2f}, "
              f"{max(loop_v):.2f}]")


if __name__ == "__main__":
    main()
