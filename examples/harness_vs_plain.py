"""Check the harness against a plain, minimal timing loop on the same cases.

    python examples/harness_vs_plain.py [--repeats 3]

Alternates `jitbench run` (one case, one mode) with a plain loop in a fresh process —
warm up, then batches of N calls under perf_counter — and prints harness median / plain median
per case and repeat. Ratios near 1 mean the harness adds no bias of its own.

The plain loop times each batch two ways, alternately: with a device sync after every call
("synced per call"), and with one sync at the end of the batch ("synced per batch", what the
harness does: ``loops`` calls, then one sync). On CPU both are exact (TF and JAX return from a
CPU call when it is done). The harness row's ``loops`` and ``sync_overhead_s`` are printed
beside it. Measured 2026-11-22 (3 repeats): TF's sync costs ~10 us, JAX's ~1 us, so the sync
does not explain the MMD cases' lean (JAX mmd harness/plain 0.84-0.94 both ways); that lean is
still open.
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
    sync = jax.block_until_ready
else:
    import tensorflow as tf
    f = tf.function(wl.tf(case.params, dtype, variant)[0], jit_compile=True)
    args = [tf.constant(a) for a in xs]
    sync = lambda out: tf.test.experimental.sync_devices()
run = lambda: f(*args)
call = lambda: sync(run())
for _ in range(20):
    call()
t0 = time.perf_counter(); call(); one = time.perf_counter() - t0
n = max(1, int(0.05 / one))
per_call, per_batch = [], []
for _ in range(15):  # the two ways alternate, so drift hits both
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    per_call.append((time.perf_counter() - t0) / n)
    t0 = time.perf_counter()
    for _ in range(n):
        out = run()
    sync(out)
    per_batch.append((time.perf_counter() - t0) / n)
print(json.dumps([statistics.median(per_call), statistics.median(per_batch)]))
"""


def harness(case, out: Path) -> dict:
    suite, fw, mode, variant, dtype, size = case
    subprocess.run([sys.executable, "-m", "bench", "run", "--suite", suite, "--framework", fw,
                    "--mode", mode, "--variant", variant, "--dtype", dtype, "--device", "cpu",
                    "--out", str(out), "--no-report", "--no-calibrate", "--min-time", "0.75"],
                   check=True, capture_output=True)
    run = sorted(out.iterdir())[-1]
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    return next(r for r in rows if r["size"] == size)


def plain(case) -> tuple[float, float]:
    """(synced per call, synced per batch) medians, seconds per call."""
    out = subprocess.run([sys.executable, "-c", PLAIN, *case], check=True,
                         capture_output=True, text=True)
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            by_call, by_batch = [], []
            for i in range(args.repeats):
                row = harness(case, Path(tmp) / f"{case[0]}-{case[1]}-{i}")
                h = row["median_s"]
                p_call, p_batch = plain(case)
                by_call.append(h / p_call)
                by_batch.append(h / p_batch)
                print(f"{'/'.join(case)} repeat {i + 1}: harness {h * 1e3:.3f} ms (loops "
                      f"{row['loops']}, sync {row['sync_overhead_s'] * 1e6:.0f} us); plain "
                      f"synced per call {p_call * 1e3:.3f} ms, ratio {h / p_call:.3f}; per "
                      f"batch {p_batch * 1e3:.3f} ms, ratio {h / p_batch:.3f}", flush=True)
            for name, r in (("synced per call", by_call), ("synced per batch", by_batch)):
                print(f"{'/'.join(case)}: harness / plain {name}: median "
                      f"{statistics.median(r):.3f}, range {min(r):.3f}-{max(r):.3f}",
                      flush=True)


if __name__ == "__main__":
    main()
