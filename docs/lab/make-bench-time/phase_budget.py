"""Where a run's seconds go, per group and phase, read from its rows.

    python docs/lab/make-bench-time/phase_budget.py RUN_DIR [RUN_DIR ...]

Per run, and per workload and framework: the groups' wall time (first row started to last
row finished), first call + warm-up, interleaved samples (loops counted), A/A control samples,
synced calls (only modes that batched calls: a mode of one call per sample has its samples as
its synced calls), the two alone blocks, insight (HLO capture), and the rest (builds, inputs,
the reference, checks); ``n_samples`` and ``loops1`` (modes sampling one call at a time);
the rows ok and the JIT rows' verdicts.
"""

import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)

def budget(run_dir):
    rows = [json.loads(l) for l in open(Path(run_dir) / "results.jsonl")]
    groups = collections.defaultdict(list)
    for r in rows:
        if r.get("status") != "ok" or r.get("started_at") is None:
            continue
        key = (r["workload"], r["variant"], r["framework"], r["device"], r["dtype"], str(r["size"]))
        groups[key].append(r)
    out = {}
    for key, rs in groups.items():
        wall = max(r["finished_at"] for r in rs) - min(r["started_at"] for r in rs)
        ph = collections.Counter()
        for r in rs:
            L = r.get("loops") or 1
            ph["first+warmup"] += (r.get("first_call_s") or 0) + (r.get("warmup_s") or 0)
            ph["samples"] += sum(r.get("samples") or []) * L
            ph["aa"] += sum(r.get("aa_samples") or []) * L if r.get("aa_samples") else 0
            ph["synced"] += sum(r.get("synced_samples") or []) if L > 1 else 0
            ph["loops1"] += L == 1
            ph["alone"] += (sum(r.get("alone_samples") or []) + sum(r.get("alone_again_samples") or [])) * L
            ph["insight"] += r.get("insight_s") or 0
            ph["n_samples"] += r.get("n_samples") or 0
        ph["wall"] = wall
        ph["rest"] = wall - sum(ph[k] for k in ("first+warmup", "samples", "aa", "synced", "alone", "insight"))
        out[key] = ph
    return out

if __name__ == "__main__":
    cols = ["wall", "first+warmup", "samples", "aa", "synced", "alone", "insight", "rest", "n_samples", "loops1"]
    for d in sys.argv[1:]:
        b = budget(d)
        rows = [json.loads(x) for x in open(Path(d) / "results.jsonl")]
        verdicts = collections.Counter(r.get("verdict") for r in rows if r.get("verdict"))
        ok = sum(1 for r in rows if r.get("status") == "ok")
        tot = collections.Counter()
        byfw = collections.defaultdict(collections.Counter)
        for k, ph in b.items():
            tot.update(ph); byfw[(k[0], k[2])].update(ph)
        print(d, "groups", len(b), "rows ok", ok, "of", len(rows), "verdicts", dict(verdicts))
        print("  total " + " ".join(f"{c}={tot[c]:.1f}" for c in cols))
        for k in sorted(byfw):
            print(f"  {k[0]:12s} {k[1]:4s} " + " ".join(f"{c}={byfw[k][c]:.1f}" for c in cols))
