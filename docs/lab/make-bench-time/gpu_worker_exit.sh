#!/usr/bin/env bash
# On a lent GPU machine (no TensorFlow): this code installed apart; the JAX matmul_relu and rnn
# quick grid on the GPU (workers that leave at once: rows, records, time from "complete" to the
# end), then a process that used the GPU from JAX, ended normally and with exit handlers then
# os._exit (3 each). usage (device tool, repository root): bash docs/lab/make-bench-time/gpu_worker_exit.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/jb . > $OUT/install.txt 2>&1
export PYTHONPATH=/tmp/jb PYTHONUNBUFFERED=1 JITBENCH_CACHE=/tmp/cache
python3 - > $OUT/result.txt 2>&1 <<'PY'
import glob, json, subprocess, sys, time
cmd = [sys.executable, "-m", "jitbench", "run", "--device", "gpu", "--framework", "jax", "--suite",
       "matmul_relu,rnn", "--size", "quick", "--no-report", "--out", "/tmp/r"]
t = time.perf_counter(); p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
tc = None
for line in p.stderr:
    if "complete" in line: tc = time.perf_counter()
p.wait(); te = time.perf_counter()
run = sorted(glob.glob("/tmp/r/*"))[-1]
rows = [json.loads(x) for x in open(run + "/results.jsonl")]
meta = json.load(open(run + "/meta.json"))
print("run rc", p.returncode, "wall", round(te - t, 1), "after complete", round(te - tc, 2) if tc else None)
print("statuses", {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}})
print("meta", meta["status"], "workers", len(meta["workers"]), "failed", [w for w in meta["workers"] if w.get("failed")])
print("verdicts", sorted((r["variant"], r["mode"], r.get("verdict")) for r in rows if r.get("verdict"))[:6])
print("dump folders left", glob.glob(run + "/logs/xla-dump-*"))
code = ("import os, sys, atexit, jax, jax.numpy as jnp\n(jnp.ones((512, 512)) @ jnp.ones((512, 512))).block_until_ready()\n"
        "print('ready', flush=True)\nsys.stdin.read()\n")
for how in ("sys.exit(0)", "atexit._run_exitfuncs(); sys.stdout.flush(); os._exit(0)"):
    ts = []
    for _ in range(3):
        q = subprocess.Popen([sys.executable, "-c", code + how], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        q.stdout.readline(); s = time.perf_counter(); q.stdin.close(); q.wait(); ts.append(round(time.perf_counter() - s, 3))
    print("exit", how[:12], ts)
PY
cat $OUT/result.txt
