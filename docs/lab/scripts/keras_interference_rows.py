"""jitbench.measure of the Keras step 4 times: each row's interference check (interleaved median
against the mode alone) and its noise.

    python docs/lab/scripts/keras_interference_rows.py
"""
import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import measure_vs_loop as M, jitbench
model, (xn, yn), loops, sync, modes = M.keras_model()
for r in range(4):
    res = jitbench.measure(model, xn, yn, modes=["graph", "xla"], budget=3)
    for row in res.rows:
        print(r, row["mode"], f"{row['median_s']*1e3:.3f}", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items() if "alone" in k or "interfer" in k})
