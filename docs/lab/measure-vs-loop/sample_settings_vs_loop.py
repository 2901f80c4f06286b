"""jitbench.measure in four sampling settings, each between two plain loops of the same step,
the order reversed every round: the JAX MLP update's jit mode and the Keras step's modes.

    python docs/lab/measure-vs-loop/sample_settings_vs_loop.py [ROUNDS]
"""
import statistics, sys
import jitbench
from jitbench.protocol.settings import Protocol
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
VARIANTS = {"1ms": (Protocol(), None), "10ms": (Protocol(sample_min_time=0.01), None),
            "10ms+switch10": (Protocol(sample_min_time=0.01, switch_calls=10), None),
            "10ms alone": (Protocol(sample_min_time=0.01, aa_control="off"), "alone")}
def keras_args():
    import tensorflow as tf
    model, (xn, yn), loops, sync, modes = steps.keras_model()
    x, y = tf.constant(xn), tf.constant(yn)
    fns = {m: tf.function(lambda a, b: model.train_step((a, b)), jit_compile=(m == "xla")) for m in modes}
    return model, (xn, yn), {m: (lambda f=fns[m]: f(x, y)) for m in modes}, sync, modes
for label, make, calls in (("jax MLP", steps.jax_mlp, 1000), ("keras", keras_args, 300)):
    fn, args, loops, sync, modes = make()
    timed = ["jit"] if label == "jax MLP" else modes
    res = {}
    names = list(VARIANTS)
    for r in range(ROUNDS):
        for v in (names if r % 2 == 0 else names[::-1]):
            p, alone = VARIANTS[v]
            for m in timed:
                before = userloop.loop_time(loops[m], sync, calls)
                out = jitbench.measure(fn, *args, modes=[m] if alone else modes, budget=3, protocol=p)
                after = userloop.loop_time(loops[m], sync, calls)
                row = next(x for x in out.rows if x["mode"] == m)
                res.setdefault((m, v), []).append(row["median_s"] / ((before + after) / 2))
    print(label, flush=True)
    for (m, v), rs in res.items():
        q = statistics.quantiles(rs, n=4)
        print(f"  {m:6s} {v:14s} measure/loop median {statistics.median(rs):.3f} IQR [{q[0]:.3f}, {q[2]:.3f}] range [{min(rs):.3f}, {max(rs):.3f}] n={len(rs)}", flush=True)
