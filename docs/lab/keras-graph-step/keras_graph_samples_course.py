"""Where in a measurement the Keras step's graph time sits above the loop's: ``jitbench.measure``
(graph and xla, sequential stopping, ``BUDGET`` s) between two plain loops of a plain
``tf.function`` of the step, and each mode's timed samples, in the order taken, cut into
quarters; each quarter's median, the synced calls' and the interference check's blocks alone
(the last thing the protocol does) over the loop's time (the mean of the two loops).

    [BUDGET=6] [RATIOS_JSON=out.json] \
        python docs/lab/keras-graph-step/keras_graph_samples_course.py [ROUNDS]
"""
import json
import os
import statistics
import sys
from pathlib import Path


import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
BUDGET = float(os.environ.get("BUDGET", "6"))
P = Protocol(budget=BUDGET)
model, (xn, yn), (x, y), fns, sync = steps.keras_functions()
loops = {m: (lambda f=fns[m]: f(x, y)) for m in ("graph", "xla")}
parts = ["q1", "q2", "q3", "q4", "synced", "alone"]
res: dict[str, dict[str, list[float]]] = {m: {p: [] for p in parts} for m in loops}
for r in range(ROUNDS):
    out, loops_s = userloop.between_mode_loops(
        loops, sync, lambda: jitbench.measure(model, xn, yn, modes=["graph", "xla"], protocol=P))
    for row in out.rows:
        m = row["mode"]
        loop = loops_s[m]
        s = row["samples"]
        k = len(s) // 4
        for i in range(4):
            res[m][f"q{i + 1}"].append(statistics.median(s[i * k:(i + 1) * k]) / loop)
        res[m]["synced"].append(row["synced_median_s"] / loop)
        alone = (row.get("alone_samples") or []) + (row.get("alone_again_samples") or [])
        if alone:
            res[m]["alone"].append(statistics.median(alone) / loop)
    print(f"round {r + 1}: graph samples {len(out.rows[0]['samples'])}", flush=True)
if os.environ.get("RATIOS_JSON"):
    Path(os.environ["RATIOS_JSON"]).write_text(json.dumps(res))
print(f"{ROUNDS} rounds, budget {BUDGET:g} s; time / the loop's")
for m, by in res.items():
    print(m)
    userloop.print_ratios({p: v for p, v in by.items() if v}, 8)
