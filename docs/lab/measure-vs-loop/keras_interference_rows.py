"""jitbench.measure of the Keras step 4 times: each row's interference check (interleaved median
against the mode alone) and its noise.

    python docs/lab/measure-vs-loop/keras_interference_rows.py
"""
import sys
import jitbench
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)
model, (xn, yn), loops, sync, modes = steps.keras_model()
for r in range(4):
    res = jitbench.measure(model, xn, yn, modes=["graph", "xla"], budget=3)
    for row in res.rows:
        print(r, row["mode"], f"{row['median_s']*1e3:.3f}", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items() if "alone" in k or "interfer" in k})
