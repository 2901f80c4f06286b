#!/usr/bin/env bash
# On a lent GPU machine (no package index, no TensorFlow): jitbench installed apart, its doctor,
# then the nightly's GPU path with this change's rule: 5 unchanged nights of the JAX MMD float32
# quick grid, then one with a planted 10% step; exit codes, wall times and the summaries to $OUT.
# usage (device tool, repository root): bash docs/lab/nightly-on-a-gpu/gpu_nightly_check.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{ python3 --version; nvidia-smi -L; python3 -c "import jax; print(jax.__version__, jax.devices())"; } \
  > $OUT/env.txt 2>&1
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/jb . > $OUT/install.txt 2>&1
export PYTHONPATH=/tmp/jb
python3 -m jitbench doctor > $OUT/doctor.txt 2>&1; echo "doctor rc=$?" >> $OUT/doctor.txt
ARGS="--suite mmd --dtype float32 --framework jax --device gpu --size quick --results /tmp/h/results --reports /tmp/h/reports"
night() {  # run-id [env...]
  local id=$1; shift
  local t0=$(date +%s)
  env "$@" timeout 150 python3 -m jitbench nightly $ARGS --run-id $id > /tmp/h-$id.out 2>&1
  local rc=$?
  echo "$id rc=$rc wall=$(( $(date +%s) - t0 ))s" >> $OUT/nights.log
  grep -v '^\[' /tmp/h-$id.out | tail -6 >> $OUT/nights.log
}
for i in 1 2 3 4 5; do night g$i X=1; done
night planted JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-gpu-float32-n512-d64=x1.1'
cp /tmp/h/reports/nightly-summary.json $OUT/summary-planted.json 2>/dev/null
python3 - > $OUT/planted-series.txt 2>&1 <<'PY'
import json
s = json.load(open("/tmp/h/reports/nightly-summary.json"))
for k in ("suspected", "confirmed"):
    for t in s.get(k) or []:
        print(k, {f: t.get(f) for f in ("series", "change", "noise", "z", "quantity", "low", "high")})
print("visible", s.get("visible"), "profile", s.get("process_profile"))
print("recheck", {k: (s.get("recheck") or {}).get(k) for k in ("rounds", "processes", "unresolved")})
PY
