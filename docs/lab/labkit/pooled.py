"""``measure_vs_loop.py`` (docs/lab/measure-vs-loop/) in fresh processes, pooled: the ratio
jitbench / loop per step and mode over every round of every process, with a 95% interval from a
two-level bootstrap (processes resampled, then rounds within each).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

MEASURE_VS_LOOP = Path(__file__).resolve().parents[1] / "measure-vs-loop" / "measure_vs_loop.py"


def pooled_interval(per_process: list[list[float]], rng, draws: int = 4000
                    ) -> tuple[float, float]:
    """95% interval of the median of the log ratios, processes then rounds resampled."""
    logs = [np.log(np.asarray(p)) for p in per_process]
    meds = np.empty(draws)
    for i in range(draws):
        picked = [logs[j] for j in rng.integers(0, len(logs), len(logs))]
        meds[i] = np.median(np.concatenate([rng.choice(p, len(p)) for p in picked]))
    lo, hi = np.quantile(meds, [0.025, 0.975])
    return float(np.exp(lo)), float(np.exp(hi))


def report(out: Path) -> None:
    """Pool the ``process-*.json`` files in ``out`` and print each step's ratios."""
    files = sorted(out.glob("process-*.json"))
    runs = [json.loads(f.read_text()) for f in files]
    rng = np.random.default_rng(0)
    print(f"{len(runs)} processes pooled from {out}")
    # every label any process measured (another JAX_MLP_HIDDEN's too), each over its own files
    labels = list(dict.fromkeys(label for r in runs for label in r))
    for label in labels:
        have = [r for r in runs if label in r]
        print(f"\n{label}" + ("" if len(have) == len(runs) else
                              f" ({len(have)} of the {len(runs)} processes measured it)"))
        for mode in dict.fromkeys(m for r in have for m in r[label]["ratios"]):
            per = [r[label]["ratios"][mode] for r in have if mode in r[label]["ratios"]]
            every = [x for p in per for x in p]
            lo, hi = pooled_interval(per, rng)
            meds = ", ".join(f"{statistics.median(p):.3f}" for p in per)
            some = "" if len(per) == len(have) else f" ({len(per)} of {len(have)} processes)"
            print(f"  {mode:6s} measure/loop median {statistics.median(every):.3f} "
                  f"[{lo:.3f}, {hi:.3f}] over {len(every)} rounds; per process {meds}{some}")
        for side in ("measure", "loop"):
            per = [r[label][f"speedup_{side}"] for r in have]
            every = [x for p in per for x in p]
            lo, hi = pooled_interval(per, rng)
            print(f"  speedup by {side:7s} median {statistics.median(every):.2f}x "
                  f"[{lo:.2f}, {hi:.2f}], rounds above 1: {sum(x > 1 for x in every)}/{len(every)}")
        # the two speedups of one round share its drift: their ratio is the sharper comparison
        per = [[a / b for a, b in zip(r[label]["speedup_measure"], r[label]["speedup_loop"])]
               for r in have]
        every = [x for p in per for x in p]
        lo, hi = pooled_interval(per, rng)
        print(f"  speedup jitbench / loop, paired by round: {statistics.median(every):.3f} "
              f"[{lo:.3f}, {hi:.3f}], above 1 in {sum(x > 1 for x in every)}/{len(every)}")
