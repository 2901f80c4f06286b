"""Duet pairs against alternating pairs on this host (issue 53, item 6).

A change night's pair today: arm A's fresh process, then arm B's, one after the other, each
pinned to core 0 (the `stable` profile), the order swapped every pair. A duet pair (Bulej et
al., ICPE 2020): A and B at the same time, each pinned to one of the two cores, the cores
swapped every pair, so both share the host's state within the pair.

For each design, N pairs of the change corpus's cases (mmd default and outer, JAX eager / jit
/ aot, float32, n512-d64; the A/B's protocol, jitbench.run.ab_arms.PROTOCOL), the two designs
interleaved pair by pair. An A/A trial first (both arms the same program: the scatter of
log(B/A) per pair, per case, and the share of it the cases of one pair have in common), then,
with --plant X, arm B with the test hook at xX on the jit cases (the step each design sees).

Usage: PYTHONPATH=/tmp/frozen python docs/lab/duet-pairs/duet_trial.py OUT N [--plant 1.05]
Prints one JSON object (and writes OUT/summary.json).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)

IDS = [f"mmd-{v}-jax-{m}-cpu-float32-n512-d64" for v in ("default", "outer")
       for m in ("eager", "jit", "aot")]
CHILD = """
import sys
from jitbench.define.workload import Filters, expand
from jitbench.run import ab_arms, runner
ids = set(sys.argv[3].split(","))
cases = [c for c in expand(Filters(suite=("mmd",), framework=("jax",), device=("cpu",),
                                   dtype=("float32",), variant=("default", "outer")))
         if c.case_id in ids]
runner.run(cases, sys.argv[1], run_id=sys.argv[2], protocol=ab_arms.PROTOCOL,
           process_profile="stable")
"""


def arm(out: Path, run_id: str, core: int, plant: float | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "JITBENCH_TEST_SLOWDOWN"}
    if plant:
        env["JITBENCH_TEST_SLOWDOWN"] = f"mmd-*-jax-jit-cpu-float32-n512-d64=x{plant}"
    return subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", CHILD, str(out),
                             run_id, ",".join(IDS)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def medians(run_dir: Path) -> dict[str, float]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("status") == "ok" and r.get("median_s"):
            out[r["case_id"]] = float(r["median_s"])
    return out


def pair(out: Path, design: str, i: int, plant: float | None) -> dict[str, float]:
    a_id, b_id = f"{design}{i}-a", f"{design}{i}-b"
    if design == "duet":  # together, cores swapped every pair
        procs = [arm(out, a_id, i % 2, None), arm(out, b_id, 1 - i % 2, plant)]
        for p in procs:
            p.wait()
    else:  # one after the other on core 0, the order swapped every pair
        order = [(a_id, None), (b_id, plant)] if i % 2 == 0 else [(b_id, plant), (a_id, None)]
        for run_id, planted in order:
            arm(out, run_id, 0, planted).wait()
    a, b = medians(out / a_id), medians(out / b_id)
    return {c: math.log(b[c] / a[c]) for c in IDS if c in a and c in b}


def describe(units: list[dict[str, float]]) -> dict:
    import numpy as np

    cases = [c for c in IDS if all(c in u for u in units)]
    m = np.array([[u[c] for c in cases] for u in units])  # pairs x cases
    sd = {c: float(np.std(m[:, j], ddof=1)) for j, c in enumerate(cases)}
    jit = [j for j, c in enumerate(cases) if "-eager-" not in c]
    per_case_var = float(np.mean(np.var(m[:, jit], ddof=1, axis=0)))
    pair_mean_var = float(np.var(m[:, jit].mean(axis=1), ddof=1))
    k = len(jit)
    shared = (pair_mean_var - per_case_var / k) / (per_case_var * (1 - 1 / k))
    return {"pairs": len(units), "sd": sd,
            "jit_sd_median": float(np.median([sd[cases[j]] for j in jit])),
            "mean_ratio": {c: float(np.exp(m[:, j].mean())) for j, c in enumerate(cases)},
            "shared_share": shared}


def main() -> None:
    out, n = Path(sys.argv[1]), int(sys.argv[2])
    plant = float(sys.argv[sys.argv.index("--plant") + 1]) if "--plant" in sys.argv else None
    out.mkdir(parents=True, exist_ok=True)
    units: dict[str, list] = {"alternating": [], "duet": []}
    walls: dict[str, list] = {"alternating": [], "duet": []}
    for i in range(n):
        for design in (("alternating", "duet") if i % 2 == 0 else ("duet", "alternating")):
            t0 = time.monotonic()
            units[design].append(pair(out, design, i, plant))
            walls[design].append(time.monotonic() - t0)
    result = {"plant": plant, "pairs": n,
              "designs": {d: {**describe(u), "wall_s_per_pair": sum(walls[d]) / len(walls[d])}
                          for d, u in units.items()}}
    (out / "summary.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
