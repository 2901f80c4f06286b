"""jitbench.measure beside the loop a user would write, alternating, in one process.

For each step: a round times a plain loop of each mode (calls back to back, one sync at the
end, after ``WARM`` warm calls; ``CALLS`` calls or at least ``LOOP_S`` seconds), measures the
step with ``jitbench.measure`` (its ``median_s``: pipelined samples), and times the loop again;
the loop's time is the mean of the two, so the host's drift over the measurement cancels to
first order. Prints, per step and mode, the ratio jitbench / loop per round, its median, IQR
and range, and each side's speedup (JIT-off time / JIT-on time) so the verdicts compare.

The Keras loop calls ``tf.function(lambda x, y: model.train_step((x, y)))`` with the batch as
arguments, as ``fit`` passes it and as jitbench calls the step (a closure over constant
tensors is another program).

    [LOOP_S=3] [STEPS=MLP,keras] [RATIOS_JSON=out.json] \
        [KERAS_HIDDEN=64] python docs/lab/scripts/measure_vs_loop.py [ROUNDS] [SAMPLE_MIN_TIME]

``KERAS_HIDDEN``: the Keras model's hidden layer widths, dash-separated (default 64: 784-64-10).
``SAMPLE_MIN_TIME``: the protocol's shortest sample in seconds (default: the protocol's own).
``RATIOS_JSON``: also write every round's ratios there (``measure_vs_loop_pooled.py`` pools the
files of several processes).
"""

from __future__ import annotations

import json
import os
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
LOOP_S = float(os.environ.get("LOOP_S", "0.3"))  # a loop lasts this long at least
STEPS = os.environ.get("STEPS", "")  # comma-separated words; a step whose label has none is left out
KERAS_HIDDEN = os.environ.get("KERAS_HIDDEN", "64")  # the Keras MLP's hidden widths, "1024-1024"
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "user_code"))


def loop_time(call, sync, calls=CALLS) -> float:
    """Seconds per call of a plain loop: ``calls`` calls, or more to last ``LOOP_S``."""
    for _ in range(WARM):
        out = call()
    sync(out)
    start = time.perf_counter()
    for _ in range(calls):
        out = call()
    sync(out)
    per = (time.perf_counter() - start) / calls
    more = int(LOOP_S / per) - calls
    if more <= 0:
        return per
    start = time.perf_counter()
    for _ in range(more):
        out = call()
    sync(out)
    return (per * calls + time.perf_counter() - start) / (calls + more)


def between_mode_loops(loops: dict, sync, measure):
    """``(measure(), {mode: the loop's seconds per call})``: a plain loop of each mode before
    the measurement and again after it in reverse order, each mode's loop time the mean of its
    two, so the host's drift over the measurement cancels to first order."""
    before = {m: loop_time(loops[m], sync) for m in loops}
    got = measure()
    after = {m: loop_time(loops[m], sync) for m in list(loops)[::-1]}
    return got, {m: (before[m] + after[m]) / 2 for m in loops}


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
    hidden = [int(h) for h in KERAS_HIDDEN.split("-")]
    model = keras.Sequential([keras.Input((784,))]
                             + [keras.layers.Dense(h, activation="relu") for h in hidden]
                             + [keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((128, 784)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, 128))
    step = lambda a, b: model.train_step((a, b))  # noqa: E731
    graph, xla = tf.function(step), tf.function(step, jit_compile=True)
    loops = {"graph": lambda: graph(x, y), "xla": lambda: xla(x, y)}
    return model, (x.numpy(), y.numpy()), loops, lambda out: tf.test.experimental.sync_devices(), \
        ["graph", "xla"]


def keras_functions():
    """The Keras step of :func:`keras_model` for the scripts that take its graph mode apart:
    (model, its batch as numpy, as tensors, ``tf.function``s of its train step: ``graph``, a
    second graph one (``twin``) and ``xla``, each called ``WARM`` times, the sync)."""
    import tensorflow as tf

    model, (xn, yn), _, sync, _ = keras_model()
    x, y = tf.constant(xn), tf.constant(yn)
    fns = {name: tf.function(lambda a, b: model.train_step((a, b)), jit_compile=(name == "xla"))
           for name in ("graph", "twin", "xla")}
    for f in fns.values():
        for _ in range(WARM):
            f(x, y)
    sync(None)
    return model, (xn, yn), (x, y), fns, sync


def step_callable(model, mode: str):
    """The TF adapter's callable of the Keras step in ``mode``, as ``jitbench.measure`` builds
    it (the call options and the device scope), called with the batch ``(x, y)``."""
    from jitbench.userfn.as_workload import adapter_for

    return adapter_for("tf").build([lambda a, b: model.train_step((a, b))], mode, "cpu")


def call_for(call, seconds: float) -> None:
    """``call()`` back to back for ``seconds`` (no sync at the end)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        call()


def only(ways: dict) -> dict:
    """The ways whose name holds one of the comma-separated words of ``ONLY`` (all if unset)."""
    words = os.environ.get("ONLY", "")
    return {k: v for k, v in ways.items() if not words or any(w in k for w in words.split(","))}


def calls_per_sample(call, sync, sample_s: float = 0.01) -> int:
    """Whole calls of ``call`` that last ``sample_s`` (from 50 calls back to back)."""
    start = time.perf_counter()
    for _ in range(50):
        call()
    sync(None)
    return max(1, round(sample_s / ((time.perf_counter() - start) / 50)))


def between_loops(variants: dict, rounds: int, call, sync) -> dict[str, list[float]]:
    """{name: [its time / the loop's, per round]}: each variant (a function returning seconds
    per call) between two plain loops of ``call`` (the loop's time: their mean), the variants
    in turn, the order reversed every round."""
    res: dict[str, list[float]] = {}
    for r in range(rounds):
        for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
            before = loop_time(call, sync)
            got = variants[name]()
            after = loop_time(call, sync)
            res.setdefault(name, []).append(got / ((before + after) / 2))
    if os.environ.get("RATIOS_JSON"):
        Path(os.environ["RATIOS_JSON"]).write_text(json.dumps(res))
    return res


def print_ratios(res: dict[str, list[float]], width: int = 24) -> None:
    for name, v in res.items():
        q = statistics.quantiles(v, n=4)
        print(f"  {name:{width}s} median {statistics.median(v):.3f} IQR [{q[0]:.3f}, "
              f"{q[2]:.3f}] range [{min(v):.3f}, {max(v):.3f}]", flush=True)


def transformer_train():
    import jax
    from jitbench.suites import transformer

    p = transformer.GRID["quick"][0]
    x, w = transformer.inputs(p, "float32", np.random.default_rng(0))
    train = transformer.jax_stages(p, "float32", "train")[0]
    x, w = jax.device_put(x), jax.device_put(w)
    jitted = jax.jit(train)
    loops = {"eager": lambda: train(x, w), "jit": lambda: jitted(x, w)}
    return train, (x, w), loops, jax.block_until_ready, ["eager", "jit"]


def main() -> None:
    print(f"rounds {ROUNDS}, loop {CALLS} calls (at least {LOOP_S:g} s) after {WARM}, sample_min_time "
          f"{PROTOCOL.sample_min_time:g} s")
    every = {}
    for label, make in (("jax MLP update 784-64-10", jax_mlp), ("flax linen step", linen),
                        (f"keras train_step 784-{KERAS_HIDDEN}-10", keras_model),
                        ("transformer block train step B2-T32-D64-H4", transformer_train)):
        if STEPS and not any(w in label for w in STEPS.split(",")):
            continue
        fn, args, loops, sync, modes = make()
        ratios = {m: [] for m in modes}
        harness_v, loop_v = [], []
        for r in range(ROUNDS):
            res, loop = between_mode_loops(
                {m: loops[m] for m in modes}, sync,
                lambda: jitbench.measure(fn, *args, modes=modes, budget=3, protocol=PROTOCOL))
            got = {row["mode"]: row["median_s"] for row in res.rows}
            for m in modes:
                ratios[m].append(got[m] / loop[m])
            harness_v.append(got[modes[0]] / got[modes[1]])
            loop_v.append(loop[modes[0]] / loop[modes[1]])
        every[label] = {"ratios": ratios, "speedup_measure": harness_v, "speedup_loop": loop_v}
        print(f"\n{label}")
        for m in modes:
            rs = ratios[m]
            q = statistics.quantiles(rs, n=4)
            print(f"  {m:6s} measure/loop median {statistics.median(rs):.3f} "
                  f"IQR [{q[0]:.3f}, {q[2]:.3f}] range [{min(rs):.3f}, {max(rs):.3f}]")
        print(f"  speedup {modes[1]} vs {modes[0]}: measure median "
              f"{statistics.median(harness_v):.2f}x [{min(harness_v):.2f}, {max(harness_v):.2f}]"
              f", loop median {statistics.median(loop_v):.2f}x [{min(loop_v):.2f}, "
              f"{max(loop_v):.2f}]")
    if os.environ.get("RATIOS_JSON"):
        Path(os.environ["RATIOS_JSON"]).write_text(json.dumps(every))


if __name__ == "__main__":
    main()
