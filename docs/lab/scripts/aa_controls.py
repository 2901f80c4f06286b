"""A/A controls and the no-JIT auto-clustering rows of one or more runs (issue 10 checks).

    python docs/lab/scripts/aa_controls.py results/<run_id> [more run folders]

For each run: its interleaving scheme, each framework's A/A band (its JIT-off mode timed beside
itself in every group: the median ratio and the span of the groups' 95% intervals, as the
report's headline shows it), and the auto-clustering-vs-graph ratio of every matmul_relu row
where no cluster formed; "*" marks a ratio outside the tf band, "!" a pair whose own interval
excludes 1.
"""
import json
import sys

import jitbench
from jitbench import analysis as A

for run in sys.argv[1:]:
    df = jitbench.load_results(run)
    meta = json.load(open(run + "/meta.json"))
    scheme = meta.get("protocol", {}).get("interleave")
    bands = A.aa_bands(A.aa_controls(df))
    print(f"{run.rstrip('/').split('/')[-1]} ({scheme})")
    for b in bands.to_dict("records"):
        print(f"   {b['framework']} {b['mode']} A/A {b['ratio']:.3f} "
              f"[{b['band_low']:.3f}-{b['band_high']:.3f}] over {b['n_controls']} groups, "
              f"{b['n_significant']} significant")
    sp = A.speedups(df)
    ac = sp[(sp["framework"] == "tf") & (sp["mode"] == "autoclustering")
            & (sp["baseline"] == "graph") & (sp["workload"] == "matmul_relu")
            & (sp["verdict"] == A.NO_JIT)]
    vals, inside = [], 0
    for r in ac.to_dict("records"):
        ok = A.in_band(bands, "tf", r["device"], "graph", r["speedup"])
        inc1 = r["ci_low"] <= 1.0 <= r["ci_high"]
        inside += bool(ok)
        vals.append(f"{r['speedup']:.3f}{'' if ok else '*'}{'' if inc1 else '!'}")
    print(f"   0-cluster autoclustering/graph: {inside} of {len(vals)} inside the tf band: "
          + " ".join(vals))
