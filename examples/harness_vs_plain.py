"""Check the harness against a plain, minimal timing loop on the same cases.

    python examples/harness_vs_plain.py [--repeats 3]

Alternates `jitbench run` (one case, one mode) with a plain loop in a fresh process —
warm up, then N synced calls under perf_counter — and prints harness median / plain median per
case and repeat. Ratios near 1 mean the harness adds no bias of its own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = [  # (suite, framework, mode, variant, dtype, size label)
    ("matmul_relu", "jax", "jit", "fused", "float32", "512x512x512"),
    ("matmul_relu", "tf", "xla", "fused", "float32", "512x512x512"),
    ("mmd", "jax", "jit", "default", "float32", "n512-d64"),
    ("mmd", "tf", "xla", "default", "float32", "n512-d64"),
]

PLAIN = r"""
import json, statistics, sys, time
import numpy as np
from bench.workload import discover, Filters, expand
suite, fw, mode, variant, dtype, size = sys.argv[1:7]
case = next(c for c in expand(Filters(suite=(suite,), framework=(fw,), mode=(mode,),
            variant=(variant,), dtype=(dtype,), device=("cpu",))) if c.size == size)
wl = discover()[suite][1]
xs = wl.inputs(case.params, dtype, np.random.default_rng(case.seed))
if fw == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(wl.jax(case.params, dtype, variant)[0])
    args = [jax.device_put(a) for a in xs]
    call = lambda: f(*args).block_until_ready()
else:
    import tensorflow as tf
    f = tf.function(wl.tf(case.params, dtype, variant)[0], jit_compile=True)
    args = [tf.constant(a) for a in xs]
    def call():
        f(*args)
        tf.test.experimental.sync_devices()
for _ in range(20):
    call()
t0 = time.perf_counter(); call(); one = time.perf_counter() - t0
n = max(1, int(0.05 / one))
meds = []
for _ in range(15):
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    meds.append((time.perf_counter() - t0) / n)
print(json.dumps(statistics.median(meds)))
"""


def harness(case, out: Path) -> float:
    suite, fw, mode, variant, dtype, size = case
    subprocess.run([sys.executable, "-m", "bench", "run", "--suite", suite, "--framework", fw,
                    "--mode", mode, "--variant", variant, "--dtype", dtype, "--device", "cpu",
                    "--out", str(out), "--no-report", "--min-time", "0.75"],
                   check=True, capture_output=True)
    run = sorted(out.iterdir())[-1]
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    return next(r["median_s"] for r in rows if r["size"] == size)


def plain(case) -> float:
    out = subprocess.run([sys.executable, "-c", PLAIN, *case], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            ratios = []
            for i in range(args.repeats):
                h = harness(case, Path(tmp) / f"{case[0]}-{case[1]}-{i}")
                p = plain(case)
                ratios.append(h / p)
                print(f"{'/'.join(case)} repeat {i + 1}: harness {h * 1e3:.3f} ms, "
                      f"plain {p * 1e3:.3f} ms, ratio {h / p:.3f}", flush=True)
            print(f"{'/'.join(case)}: ratio median {statistics.median(ratios):.3f}, "
                  f"range {min(ratios):.3f}-{max(ratios):.3f}", flush=True)


if __name__ == "__main__":
    main()
