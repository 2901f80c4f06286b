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
        [KERAS_HIDDEN=64] [JAX_MLP_HIDDEN=64] python docs/lab/measure-vs-loop/measure_vs_loop.py [ROUNDS] [SAMPLE_MIN_TIME]

``KERAS_HIDDEN``, ``JAX_MLP_HIDDEN``: the Keras model's and the JAX MLP's hidden layer widths,
dash-separated (default 64: 784-64-10).
``SAMPLE_MIN_TIME``: the protocol's shortest sample in seconds (default: the protocol's own).
``RATIOS_JSON``: also write every round's ratios there
(``docs/lab/keras-graph-step/measure_vs_loop_pooled.py`` pools the files of several processes,
and runs them). The loops and steps are labkit's (docs/lab/labkit/).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import jitbench
from jitbench.protocol.settings import Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402
from labkit.userloop import CALLS, LOOP_S, WARM, between_mode_loops  # noqa: E402
from labkit.steps import (  # noqa: E402
    hidden_widths, jax_mlp, keras_model, linen, transformer_train)

usage(__doc__)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
PROTOCOL = (Protocol(sample_min_time=float(sys.argv[2])) if len(sys.argv) > 2 else Protocol())
STEPS = os.environ.get("STEPS", "")  # comma-separated words; a step whose label has none is left out
# the Keras and the JAX MLP's hidden widths, as labkit.steps builds them ("64", "1024-1024")
KERAS_HIDDEN, JAX_MLP_HIDDEN = ("-".join(map(str, hidden_widths(v)))
                                for v in ("KERAS_HIDDEN", "JAX_MLP_HIDDEN"))


def main() -> None:
    print(f"rounds {ROUNDS}, loop {CALLS} calls (at least {LOOP_S:g} s) after {WARM}, sample_min_time "
          f"{PROTOCOL.sample_min_time:g} s")
    every = {}
    for label, make in ((f"jax MLP update 784-{JAX_MLP_HIDDEN}-10", jax_mlp),
                        ("flax linen step", linen),
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
