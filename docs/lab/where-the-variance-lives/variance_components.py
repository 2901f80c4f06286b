"""Where the variance of a JIT-on / JIT-off speedup lives: sample, block, build, process.

    python docs/lab/where-the-variance-lives/variance_components.py                      # 5 cases, minutes on 2 cores
    python docs/lab/where-the-variance-lives/variance_components.py --case tf:matmul_relu:fused:1:xla:graph --builds 4

For each case, ``--processes`` fresh processes; in each, ``--builds`` times: both modes built
afresh and the inputs placed again, warmed up, then ``--blocks`` pairs of blocks (``--samples``
samples of the baseline, then of the JIT mode; one untimed call after each switch, as the
harness does). The unit is a block pair's log ratio, log(baseline block median / JIT block
median). Nested analysis of variance (method of moments) splits its variance into:

- sample: what the samples' own scatter puts into a block median (within-block variance of the
  log samples of both modes, x pi/2 for a median, / samples per block);
- block:  the rest of the variance between block pairs of one build;
- build:  between builds of one process, beyond what their blocks explain;
- process: between processes, beyond what their builds explain.

Printed per case as standard deviations of the log ratio (~ relative, in %), with the mean
speedup; a component estimated below zero is shown as 0.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # the repository, from docs/lab/<entry>/
sys.path.insert(0, str(ROOT))

from jitbench.define.workload import Case, load_workload  # noqa: E402
from jitbench.frameworks import get_adapter  # noqa: E402
from jitbench.protocol import case_setup as casework  # noqa: E402
from jitbench.protocol.samples import ModeResult, take_sample, untimed_calls  # noqa: E402
from jitbench.protocol.timing import Protocol, first_and_warmup  # noqa: E402

# framework:workload:variant:size index in the quick grid:jit mode:baseline
CASES = ["tf:matmul_relu:fused:0:xla:graph",  # ~50 us a call, XLA no help (0.93x)
         "tf:mmd:default:0:xla:graph",  # ~4 ms, XLA helps (1.3x)
         "tf:mmd:outer:1:xla:graph",  # > 50 ms, XLA hurts (0.5x)
         "jax:mmd:outer:1:jit:eager",  # > 5 ms jitted, jit helps (13x)
         "jax:rnn:forward:0:jit:eager"]  # < 1 ms jitted, jit helps (1.4x)


def child(spec: str, builds: int, blocks: int, samples: int, order: str = "sequential") -> dict:

    fw, workload, variant, index, jit, base = spec.split(":")
    source = f"suites.{workload}"
    wl = load_workload(source)
    params = wl.grid["quick"][int(index)]
    case = Case(wl.name, variant, wl.label(params), json.dumps(dict(params), sort_keys=True),
                "float32", fw, "cpu", base, "quick", source)
    adapter = get_adapter(fw)

    def build() -> tuple[dict, dict]:
        """Both modes built afresh on inputs placed afresh, warmed up."""
        inputs = casework.workload_inputs(wl, case)
        reference = casework.workload_reference(wl, case, inputs)
        work = casework.Casework(adapter, fw, "cpu", inputs, reference,
                                 *wl.tolerance["float32"])
        timed = {m: work.timed(m, work.build(wl.builder(fw)(params, "float32", variant), m))
                 for m in (base, jit)}
        res = {m: first_and_warmup(t, Protocol(), adapter.counters, time.perf_counter)
               for m, t in timed.items()}
        return timed, res

    def block_pair(timed: dict, res: dict) -> dict:
        pair = {}
        for m in (base, jit):
            r = ModeResult(m, loops=res[m].loops)
            untimed_calls(timed[m], r, adapter.counters, 1)
            for _ in range(samples):
                take_sample(timed[m], r, adapter.counters, time.perf_counter)
            pair[m] = r.samples
        return pair

    if order == "sequential":  # a build's blocks, then the next build made and measured
        out = []
        for _ in range(builds):
            made = build()
            out.append([block_pair(*made) for _ in range(blocks)])
    else:  # "interleaved": every build made first, then one block pair of each in turn
        made = [build() for _ in range(builds)]
        out = [[] for _ in made]
        for _ in range(blocks):
            for b, m in enumerate(made):
                out[b].append(block_pair(*m))
    return {"spec": spec, "builds": out, "base": base, "jit": jit}


def components(processes: list[dict]) -> dict[str, float]:
    """Variance components (log scale) of the block-pair log ratio, nested:
    process > build > block (> sample, from the within-block scatter)."""
    base, jit = processes[0]["base"], processes[0]["jit"]
    units, within = [], []  # units[p][b][k]
    for p in processes:
        up = []
        for build in p["builds"]:
            ub = []
            for pair in build:
                a, b = [math.log(x) for x in pair[base]], [math.log(x) for x in pair[jit]]
                ub.append(statistics.median(a) - statistics.median(b))
                within.append((statistics.variance(a) + statistics.variance(b)))
            up.append(ub)
        units.append(up)
    n_s = len(processes[0]["builds"][0][0][base])
    v_sample = math.pi / 2 * statistics.fmean(within) / n_s
    k = len(units[0][0])
    nb = len(units[0])
    v_within_build = statistics.fmean(statistics.variance(ub) for up in units for ub in up)
    build_means = [[statistics.fmean(ub) for ub in up] for up in units]
    v_between_builds = statistics.fmean(statistics.variance(bm) for bm in build_means) \
        if nb > 1 else math.nan
    proc_means = [statistics.fmean(bm) for bm in build_means]
    v_between_proc = statistics.variance(proc_means) if len(proc_means) > 1 else math.nan
    v_block = v_within_build - v_sample
    v_build = v_between_builds - v_within_build / k
    v_proc = v_between_proc - v_between_builds / nb
    mean = statistics.fmean(proc_means)
    return {"speedup": math.exp(mean), "sample": v_sample, "block": v_block, "build": v_build,
            "process": v_proc, "n": (len(processes), nb, k, n_s)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", help="fw:workload:variant:index:jit:baseline "
                                                    "(repeatable; default: 4 cases)")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--builds", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--order", choices=("sequential", "interleaved"), default="sequential",
                    help="sequential: a build's blocks, then the next build (build = builds' "
                         "own differences + the machine's drift between them); interleaved: "
                         "the builds' blocks in turn, in one time window (their own differences "
                         "alone)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.builds, args.blocks, args.samples,
                               args.order)))
        return 0
    from jitbench.run.worker_start import env

    print(f"{'case':44} {'speedup':>8} {'sample':>7} {'block':>7} {'build':>7} {'process':>7}"
          f"   (sd of the log ratio, %; processes x builds x blocks x samples)")
    for spec in args.case or CASES:
        runs = []
        for _ in range(args.processes):
            done = subprocess.run(
                [sys.executable, __file__, "--child", spec, "--builds", str(args.builds),
                 "--blocks", str(args.blocks), "--samples", str(args.samples),
                 "--order", args.order],
                capture_output=True, text=True, env=env(spec.split(":")[0], {}), check=False)
            if done.returncode != 0:
                print(f"{spec}: child failed: {done.stderr.strip().splitlines()[-1:]}")
                break
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        else:
            c = components(runs)
            sd = {k: 100 * math.sqrt(max(c[k], 0.0)) if not math.isnan(c[k]) else math.nan
                  for k in ("sample", "block", "build", "process")}
            print(f"{spec:44} {c['speedup']:8.3f} " + " ".join(
                f"{sd[k]:7.2f}" for k in ("sample", "block", "build", "process"))
                + f"   {'x'.join(map(str, c['n']))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
