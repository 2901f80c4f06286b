"""Where fresh-process noise comes from: the same `jitbench run` in N fresh processes per
setting, the settings alternating, and per series the scatter (sd of the log, %) across
processes of each JIT mode's speedup over its nearest JIT-off mode, of its own time and of that
baseline's time. ``--deadline S`` starts no round of processes after S seconds (a device's
limited time).

    python docs/lab/process-noise/process_noise.py --processes 5 -- --suite mmd --variant default \\
        --dtype float32 --device cpu --size quick

Settings (``--settings``, default all): ``default`` (as a user runs it), ``threads1`` (thread
pools at one thread: TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, OMP_NUM_THREADS,
XLA_FLAGS), ``pinned`` (``taskset -c 0``), ``quiet`` (both, and PYTHONHASHSEED=0), and one at a
time ``hashseed`` and ``malloc`` (glibc's trim and mmap thresholds at 1 GiB), and on one core
``pinned_malloc`` and ``pinned_arena1`` (one glibc arena). Prints a markdown table; keeps the
run folders under --out. Five processes give an sd uncertain by about a third.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

THREADS1 = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
SETTINGS = {
    "default": ({}, []),
    "threads1": (THREADS1, []),
    "pinned": ({}, ["taskset", "-c", "0"]),
    "quiet": (dict(THREADS1, PYTHONHASHSEED="0"), ["taskset", "-c", "0"]),
    # one at a time: the hash seed, glibc's trim/mmap thresholds (freed temporaries kept rather
    # than returned and faulted in again). JAX's asynchronous CPU dispatch has no environment
    # variable (JAX_CPU_ENABLE_ASYNC_DISPATCH=false left jax_cpu_enable_async_dispatch True).
    "hashseed": ({"PYTHONHASHSEED": "0"}, []),
    "malloc": ({"MALLOC_TRIM_THRESHOLD_": str(2 ** 30), "MALLOC_MMAP_THRESHOLD_": str(2 ** 30)},
               []),
    # on top of one core (what is left once pinned): the allocator's thresholds, one arena
    "pinned_malloc": ({"MALLOC_TRIM_THRESHOLD_": str(2 ** 30),
                       "MALLOC_MMAP_THRESHOLD_": str(2 ** 30)}, ["taskset", "-c", "0"]),
    "pinned_arena1": ({"MALLOC_ARENA_MAX": "1"}, ["taskset", "-c", "0"]),
    # the nightly's stable profile as shipped (one core, hash seed 0), and it with the thread
    # pools at one thread or with the allocator's thresholds
    "stable": ({"PYTHONHASHSEED": "0"}, ["taskset", "-c", "0"]),
    "stable_malloc": ({"PYTHONHASHSEED": "0", "MALLOC_TRIM_THRESHOLD_": str(2 ** 30),
                       "MALLOC_MMAP_THRESHOLD_": str(2 ** 30)}, ["taskset", "-c", "0"]),
}


def run_once(setting: str, run_id: str, out: Path, jitbench_args: list[str]) -> float:
    env_extra, prefix = SETTINGS[setting]
    env = dict(os.environ, **env_extra)
    t0 = time.monotonic()
    subprocess.run([*prefix, sys.executable, "-m", "jitbench", "run", *jitbench_args,
                    "--no-report", "--no-calibrate", "--out", str(out), "--run-id", run_id],
                   env=env, check=True, capture_output=True, text=True)
    return time.monotonic() - t0


def series(run_dir: Path) -> dict[str, float]:
    """series -> value: each JIT row's verdict speedup and its own median time, each
    baseline's median time."""
    out = {}
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").open()]
    for r in rows:
        if r.get("status") != "ok":
            continue
        name = f"{r['framework']} {r['workload']} {r['variant']} {r['dtype']} {r['size']}"
        if r.get("verdict_speedup"):
            out[f"{name}, {r['mode']}/{r['verdict_baseline']} ratio"] = r["verdict_speedup"]
            out[f"{name}, {r['mode']} time"] = r["median_s"]
        elif not r.get("jit") and r["mode"] in ("eager", "graph") and r.get("median_s"):
            base = "graph" if r["framework"] == "tf" else "eager"
            if r["mode"] == base:
                out[f"{name}, {base} time"] = r["median_s"]
    return out


def sd_log_pct(values: list[float]) -> float:
    logs = [math.log(v) for v in values if v and v > 0]
    return 100 * statistics.stdev(logs) if len(logs) > 1 else math.nan


def main(argv: list[str]) -> int:
    if "--" in argv:
        i = argv.index("--")
        argv, jitbench_args = argv[:i], argv[i + 1:]
    else:
        jitbench_args = []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--settings", default=",".join(SETTINGS),
                    help=f"comma list of {', '.join(SETTINGS)}")
    ap.add_argument("--out", default="/tmp/jitbench-process-noise")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds after which no further round of processes starts (a table "
                         "of the rounds done is still printed)")
    args = ap.parse_args(argv)
    settings = args.settings.split(",")
    bad = [s for s in settings if s not in SETTINGS]
    if bad:
        sys.exit(f"unknown setting {', '.join(bad)}; valid: {', '.join(SETTINGS)}")
    if any(SETTINGS[s][1] for s in settings):
        if shutil.which("taskset") is None:
            sys.exit("taskset is needed for the pinned settings")
    out = Path(args.out)
    found: dict[str, dict[str, list[float]]] = {s: {} for s in settings}
    walls: dict[str, list[float]] = {s: [] for s in settings}
    start = time.monotonic()
    for i in range(args.processes):
        if args.deadline is not None and i > 0 and time.monotonic() - start > args.deadline:
            print(f"deadline: {i} rounds of processes", file=sys.stderr, flush=True)
            break
        order = settings if i % 2 == 0 else settings[::-1]  # alternating: drift cancels
        for s in order:
            run_id = f"{s}-{i}"
            walls[s].append(run_once(s, run_id, out, jitbench_args))
            for name, v in series(out / run_id).items():
                found[s].setdefault(name, []).append(v)
            print(f"process {i + 1}/{args.processes} {s}: {walls[s][-1]:.0f} s",
                  file=sys.stderr, flush=True)
    names = sorted({n for s in settings for n in found[s]})
    print("| series | " + " | ".join(settings) + " |")
    print("|---|" + "---|" * len(settings))
    for n in names:
        cells = [f"{sd_log_pct(found[s].get(n, [])):.1f}%" for s in settings]
        print(f"| {n} | " + " | ".join(cells) + " |")
    print("| wall per process (median) | " + " | ".join(
        f"{statistics.median(walls[s]):.0f} s" for s in settings) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
