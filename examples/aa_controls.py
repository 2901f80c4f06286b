"""A/A controls and the no-JIT auto-clustering rows of one or more runs (issue 10 checks).

    python examples/aa_controls.py results/<run_id> [more run folders]

For each run: its interleaving scheme, each framework's A/A control (the nearest JIT-off mode
timed beside itself) with its 95% interval, and the auto-clustering-vs-graph ratio of every
matmul_relu row where no cluster formed; "*" marks a ratio outside the tf control's interval,
"!" a pair whose own interval excludes 1.
"""
import json
import sys

import bench
from bench import analysis as A
from bench.analysis.control import aa_controls

runs = sys.argv[1:]
for run in runs:
    df = bench.load_results(run)
    meta = json.load(open(run + "/meta.json"))
    scheme = meta.get("protocol", {}).get("interleave")
    c = aa_controls(df)
    ctl = {r["framework"]: r for r in c.to_dict("records")}
    line = [f"{run.split('/')[-1]} ({scheme})"]
    for fw, r in sorted(ctl.items()):
        line.append(f"{fw} {r['mode']} A/A {r['ratio']:.3f} [{r['ci_low']:.3f}-{r['ci_high']:.3f}]"
                    f"{' SIGNIFICANT' if r['significant'] else ''}")
    sp = A.speedups(df)
    ac = sp[(sp["framework"] == "tf") & (sp["mode"] == "autoclustering")
            & (sp["baseline"] == "graph") & (sp["workload"] == "matmul_relu")]
    tf = ctl.get("tf")
    inside = 0
    vals = []
    for r in ac.to_dict("records"):
        ok = tf is not None and tf["ci_low"] <= r["speedup"] <= tf["ci_high"]
        # also: the pair's own interval includes 1
        inc1 = r["ci_low"] <= 1.0 <= r["ci_high"]
        inside += ok
        vals.append(f"{r['speedup']:.3f}{'' if ok else '*'}{'' if inc1 else '!'}[{r['verdict']}]")
    line.append(f"0-cluster autoclustering/graph ({len(vals)}): {inside} inside the tf A/A "
                f"interval: " + " ".join(vals))
    print("  ".join(line[:1]) + "\n   " + "\n   ".join(line[1:]))
