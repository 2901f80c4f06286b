#!/usr/bin/env bash
# On a lent GPU machine (no package index, no TensorFlow), issue 64 item 1 on the GPU: each
# mode's sample length (the pipelining probe) against the code before it (56b30dd, from
# .gpu/old.tar: `git archive 56b30dd bench suites pyproject.toml README.md setup.py`):
#   1. `jitbench doctor` with no option (the devices the machine has; TensorFlow missing);
#   2. measure_vs_loop.py: a JAX MLP update and a flax linen step, jitbench beside a plain loop;
#   3. the JAX 3-suite quick grid on the GPU, new, old, new, old, each under `timeout 80`.
# usage (device tool, repository root, carry .gpu): bash docs/lab/make-bench-time/gpu_sample_length.sh
[ "${1:-}" = "--help" ] && { sed -n 2,8p "$0"; exit 0; }
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
repo=$(pwd)
{ python3 --version; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
  python3 -c "import jax; print(jax.__version__, jax.devices())"; } > $OUT/env.txt 2>&1
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/new . > $OUT/install.txt 2>&1
mkdir -p /tmp/oldsrc && tar -xf .gpu/old.tar -C /tmp/oldsrc
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/old /tmp/oldsrc >> $OUT/install.txt 2>&1
export JITBENCH_CACHE=/tmp/cache PYTHONUNBUFFERED=1
(cd /tmp && PYTHONPATH=/tmp/new timeout 100 python3 -m jitbench doctor; echo "doctor rc=$?") \
  > $OUT/doctor.txt 2>&1
PYTHONPATH=/tmp/new STEPS=MLP,linen timeout 170 python3 docs/lab/measure-vs-loop/measure_vs_loop.py 3 \
  > $OUT/loop.txt 2>&1; echo "loop rc=$?" >> $OUT/loop.txt
for run in new1 old1 new2 old2; do
  root=/tmp/${run%?}
  t0=$(date +%s.%N)
  (cd /tmp && PYTHONPATH=$root timeout 80 python3 -m jitbench run --device gpu --framework jax \
    --size quick --suite matmul_relu,mmd,rnn --no-report --out /tmp/r/$run > /tmp/r-$run.log 2>&1)
  rc=$?
  echo "$run rc=$rc wall=$(awk "BEGIN{print $(date +%s.%N) - $t0}")" >> $OUT/walls.txt
  tail -3 /tmp/r-$run.log >> $OUT/walls.txt
done
(cd /tmp && tar -czf $OUT/runs.tgz r r-*.log)
cat $OUT/env.txt $OUT/doctor.txt $OUT/loop.txt $OUT/walls.txt
