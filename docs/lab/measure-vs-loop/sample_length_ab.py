"""The protocol's shortest sample (``sample_min_time``), 1 ms against 10 ms, alternating in one
process, each beside the plain loop (``measure_vs_loop.py``), for the JAX MLP update's jit mode
and the flax linen step's: the ratio jitbench / loop per round.

    python docs/lab/measure-vs-loop/sample_length_ab.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path



import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
for label, make in (("jax MLP update jit", steps.jax_mlp), ("flax linen step jit", steps.linen)):
    fn, args, loops, sync, _ = make()
    ratios: dict[float, list[float]] = {0.001: [], 0.01: []}
    for r in range(ROUNDS):
        for smt in ((0.001, 0.01) if r % 2 == 0 else (0.01, 0.001)):
            res = jitbench.measure(fn, *args, modes=["eager", "jit"], budget=3,
                                   protocol=Protocol(sample_min_time=smt))
            jit = next(x for x in res.rows if x["mode"] == "jit")
            ratios[smt].append(jit["median_s"] / userloop.loop_time(loops["jit"], sync))
    print(label)
    for smt, rs in ratios.items():
        print(f"  sample_min_time {smt:g} s: measure/loop median {statistics.median(rs):.3f} "
              f"range [{min(rs):.3f}, {max(rs):.3f}] ({len(rs)} rounds)")
