"""How long each process of an A/B pair should sample, duet pairs (issue 53, item 6).

The A/B's protocol samples each case group for 0.3 s a process (``jitbench.run.ab_arms.PROTOCOL``),
chosen when its workers ran on every core, where the scatter between fresh processes dwarfed the
sampling's own. Pinned (the ``stable`` profile, and every duet), a process lands within a few
percent of the next, and a mode of a 25 ms call gets 5 samples in 0.3 s. This measures the
scatter of log(B/A) per pair at several budgets, the budgets interleaved run by run in one
session: ``jitbench ab`` runs of the quick JAX MMD float32 CPU grid (default variant: n256 and
n512, eager / jit / aot), duet pairs, a fixed number of pairs each (no early stop), arm B with
the test hook at ``--plant`` on the jit n512 case (the other cases are A/A).

Usage: PYTHONPATH=<frozen jitbench> python docs/lab/duet-pairs/duet_budget.py OUT \\
           --budgets 0.3,1.5 --runs 3 --pairs 6 [--plant 1.1]
Prints one JSON object (and writes OUT/summary.json).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

PLANTED = "mmd-default-jax-jit-cpu-float32-n512-d64"


def main() -> None:
    import numpy as np
    from jitbench.define.workload import Filters, expand
    from jitbench.run.ab_arms import Settings, parse_arm, run_ab

    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--budgets", default="0.3,1.5")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pairs", type=int, default=6)
    p.add_argument("--plant", type=float, default=1.1)
    p.add_argument("--pairing", default="duet")
    args = p.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    cases = expand(Filters(suite=("mmd",), framework=("jax",), device=("cpu",),
                           dtype=("float32",), variant=("default",)))
    arms = (parse_arm("a", ""), parse_arm("b", f"JITBENCH_TEST_SLOWDOWN={PLANTED}=x{args.plant}"))
    out = Path(args.out)
    units: dict[float, dict[str, list[float]]] = {b: {} for b in budgets}
    wall: dict[float, list[float]] = {b: [] for b in budgets}
    samples: dict[float, list[int]] = {b: [] for b in budgets}
    for k in range(args.runs):
        for budget in (budgets if k % 2 == 0 else budgets[::-1]):
            t0 = time.monotonic()
            run_dir = run_ab(cases, out, arms, Settings(
                max_pairs=args.pairs, fixed=True, budget=budget, pairing=args.pairing,
                process_profile="stable"), run_id=f"b{budget:g}-{k}")
            wall[budget].append((time.monotonic() - t0) / args.pairs)
            by: dict[tuple[str, int], dict[str, float]] = {}
            for line in (run_dir / "results.jsonl").read_text().splitlines():
                r = json.loads(line)
                if r.get("status") == "ok" and r.get("median_s"):
                    by.setdefault((r["case_id"], r["ab_round"]), {})[r["ab_arm"]] = r["median_s"]
                    samples[budget].append(int(r.get("n_samples") or 0))
            for (case, _), ab in by.items():
                if "a" in ab and "b" in ab:
                    units[budget].setdefault(case, []).append(math.log(ab["b"] / ab["a"]))
    summary = {}
    for b in budgets:
        per_case = {c: {"pairs": len(u), "ratio": round(float(np.exp(np.mean(u))), 4),
                        "sd": round(float(np.std(u, ddof=1)), 4)}
                    for c, u in sorted(units[b].items()) if len(u) > 2}
        summary[f"{b:g}"] = {"cases": per_case, "wall_per_pair_s": round(float(np.median(
            wall[b])), 2), "median_samples": float(np.median(samples[b]))}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
