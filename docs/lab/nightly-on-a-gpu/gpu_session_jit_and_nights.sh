#!/usr/bin/env bash
# On a lent GPU machine (no package index, no TensorFlow), one call of the device tool:
# 1. what users jit: the transformer block in JAX (quick and full sizes, float32 and bfloat16),
#    a Keras MLP on the JAX backend, flax linen and NNX steps (docs/lab/what-users-jit/gpu_users.py;
#    flax, optax, keras and their pure-Python dependencies from wheels in gpu_wheels/, each
#    installed only where the machine lacks it);
# 2. a JAX change night on the GPU: two nights of the MMD default quick grid (the first, then
#    an unchanged one), then a night with two steps planted in its n512 group (jit x1.10, aot
#    x1.05), decided by the A/B of the change; exit codes, wall times, summaries and every
#    run folder (pairs included) to $OUT.
# usage (device tool, repository root): bash docs/lab/nightly-on-a-gpu/gpu_session_jit_and_nights.sh
#   [nights|users|all]  (default all; two device calls fit the per-call limit better)
set -u
PART=${1:-all}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
{ python3 --version; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm --format=csv
  python3 -c "import jax; print(jax.__version__, jax.devices())"; } > $OUT/env.txt 2>&1
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/jb . > $OUT/install.txt 2>&1
for w in gpu_wheels/*.whl; do
  name=$(basename $w | cut -d- -f1)
  if python3 -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" $name 2>/dev/null; then
    echo "have $name" >> $OUT/install.txt
  else
    pip install -q --no-deps --no-index --target /tmp/jb $w >> $OUT/install.txt 2>&1 && echo "added $name" >> $OUT/install.txt
  fi
done
export PYTHONPATH=/tmp/jb PYTHONUNBUFFERED=1
log "installed"

# --- 1. what users jit
run() {  # name timeout args...
  local name=$1 t=$2; shift 2
  timeout $t python3 -m jitbench run --framework jax --device gpu --no-report --out /tmp/r/$name "$@" \
    > $OUT/run-$name.log 2>&1
  log "run $name rc=$?"
}
if [ $PART != nights ]; then
run tq 80 --suite transformer --size quick
run tf 110 --suite transformer --size full
timeout 70 python3 docs/lab/what-users-jit/gpu_users.py > $OUT/users.txt 2>&1; log "users rc=$?"
python3 - > $OUT/transformer.txt 2>&1 <<'PY'
import glob, jitbench
from jitbench import analysis
for name in ("tq", "tf"):
    for d in glob.glob(f"/tmp/r/{name}/*"):
        df = jitbench.load_results(d)
        cols = [c for c in ("variant", "size", "dtype", "mode", "status", "precision", "median_s",
                            "first_call_s", "max_rel_err", "norm_rel_err", "gflops") if c in df]
        print(name, d); print(df[cols].to_string(max_colwidth=40))
        sp = analysis.speedups(df)
        print(sp[[c for c in ("variant", "size", "dtype", "mode", "baseline", "speedup", "ci_low",
                              "ci_high", "verdict") if c in sp]].to_string())
PY
log "tables"
fi

# --- 2. a change night on the GPU
ARGS="--suite mmd --variant default --dtype float32 --framework jax --device gpu --size quick --results /tmp/h/results --reports /tmp/h/reports"
night() {  # run-id timeout [env...]
  local id=$1 t=$2; shift 2
  local t1=$(date +%s)
  env "$@" timeout $t python3 -m jitbench nightly $ARGS --run-id $id > $OUT/night-$id.out 2>&1
  local rc=$?
  log "night $id rc=$rc wall=$(( $(date +%s) - t1 ))s"
  cp /tmp/h/reports/nightly-summary.json $OUT/summary-$id.json 2>/dev/null
}
[ $PART = users ] && { (cd /tmp && tar -czf $OUT/runs.tgz r 2>/dev/null); exit 0; }
night g1 90 X=1
night g2 90 X=1
night step 330 JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-gpu-float32-n512-d64=x1.1;mmd-default-jax-aot-gpu-float32-n512-d64=x1.05'
(cd /tmp && tar -czf $OUT/runs.tgz h r 2>/dev/null)
log "done"
