"""The Keras step's samples under ``jitbench.measure`` against the loop: its ``median_s`` and
the samples' mean, lower quartile and minimum, each over the loop's time per call (a plain loop
of each mode before and after the measurement, their mean), and the number of samples.
A loop's time is a mean over its calls; a gap in the median that the mean does not share
would be the statistic, not the step.

    [ROUNDS=8] [RATIOS_JSON=out.json] python docs/lab/keras-graph-step/keras_sample_stats.py
"""
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np


import jitbench  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

model, args, loops, sync, modes = steps.keras_model()
out: dict[str, list[float]] = {}
for r in range(int(os.environ.get("ROUNDS", "8"))):
    res, loops_s = userloop.between_mode_loops(
        loops, sync, lambda: jitbench.measure(model, *args, modes=modes, budget=3))
    for row in res.rows:
        m = row["mode"]
        loop = loops_s[m]
        s = np.asarray(row["samples"])
        for k, v in (("median", row["median_s"]), ("mean", s.mean()),
                     ("q25", np.quantile(s, 0.25)), ("min", s.min())):
            out.setdefault(f"{m} {k}", []).append(float(v) / loop)
        out.setdefault(f"{m} samples", []).append(len(s))
for k, v in out.items():
    print(f"{k:14s} median {statistics.median(v):.3f} range [{min(v):.3f}, {max(v):.3f}]")
if os.environ.get("RATIOS_JSON"):
    Path(os.environ["RATIOS_JSON"]).write_text(json.dumps(out))
