"""The Keras step through jitbench.measure in sampling settings that differ in what happens
after a switch of mode, each between two plain loops of each mode (the loop's time: their mean),
the settings' order reversed every round: jitbench's graph and xla times / the loop's.

    python docs/lab/keras-graph-step/switch_settings_vs_loop.py [ROUNDS] [SETTING ...]

Settings: the protocol's own; ``switch_calls`` 25 and 50 (about 50 and 100 ms of this step);
``block_time`` 1 s. Settings on the command line (``name=field:value,field:value``, values
floats or ints) replace all but the protocol's own. ``RATIOS_JSON=path``: every round's ratios
written there too.
"""
import json
import os
import statistics
import sys

import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
ARGV = sys.argv[1:]

ROUNDS = int(ARGV[0]) if ARGV else 6
SETTINGS = {"default": {}, "switch 25": {"switch_calls": 25}, "switch 50": {"switch_calls": 50},
            "block 1 s": {"block_time": 1.0}}
if ARGV[1:]:
    SETTINGS = {"default": {}}
for extra in ARGV[1:]:
    name, fields = extra.split("=", 1)
    SETTINGS[name] = {k: (float(v) if "." in v else int(v))
                      for k, v in (f.split(":") for f in fields.split(","))}


def main() -> None:
    import tensorflow as tf

    model, (xn, yn), loops, sync, modes = steps.keras_model()
    x, y = tf.constant(xn), tf.constant(yn)
    fns = {m: tf.function(lambda a, b: model.train_step((a, b)), jit_compile=(m == "xla"))
           for m in modes}
    loops = {m: (lambda f=fns[m]: f(x, y)) for m in modes}
    res, speed = {}, {}
    names = list(SETTINGS)
    for r in range(ROUNDS):
        for name in (names if r % 2 == 0 else names[::-1]):
            out, loop = userloop.between_mode_loops(
                loops, sync, lambda: jitbench.measure(model, xn, yn, modes=list(modes), budget=3,
                                                      protocol=Protocol(**SETTINGS[name])))
            got = {row["mode"]: row["median_s"] for row in out.rows}
            for m in modes:
                res.setdefault((name, m), []).append(got[m] / loop[m])
            speed.setdefault(name, []).append(got["graph"] / got["xla"])
    if os.environ.get("RATIOS_JSON"):
        with open(os.environ["RATIOS_JSON"], "w") as fh:
            json.dump({f"{n} {m}": v for (n, m), v in res.items()}, fh)
    print(f"{ROUNDS} rounds; jitbench time / loop time, median IQR (range); xla over graph")
    for name in names:
        parts = []
        for m in modes:
            rs = res[(name, m)]
            q = statistics.quantiles(rs, n=4)
            parts.append(f"{m} {statistics.median(rs):.3f} [{q[0]:.3f}, {q[2]:.3f}] "
                         f"({min(rs):.2f}-{max(rs):.2f})")
        print(f"  {name:10s} " + "; ".join(parts)
              + f"; speedup {statistics.median(speed[name]):.2f}x", flush=True)


if __name__ == "__main__":
    main()
