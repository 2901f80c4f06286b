#!/usr/bin/env bash
# On a lent GPU machine (no package index, no TensorFlow): the JAX quick grid on the GPU with the
# code before issue 47 (old, from gpu_old.tar: `git archive bad64bd bench suites pyproject.toml README.md setup.py`)
# and this code (new), alternating new, old, new, old in one session; the new code's first run
# measures its calibration on the run's workers, its second reads it kept. Wall times, each
# run's breakdown (docs/lab/make-bench-time/run_time_and_trust.py) and the rows to $OUT.
# usage (device tool, repository root): bash docs/lab/make-bench-time/gpu_first_verdict.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{ python3 --version; nvidia-smi -L; python3 -c "import jax; print(jax.__version__, jax.devices())"; } \
  > $OUT/env.txt 2>&1
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/new . > $OUT/install.txt 2>&1
mkdir -p /tmp/oldsrc && tar -xf gpu_old.tar -C /tmp/oldsrc
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/old /tmp/oldsrc >> $OUT/install.txt 2>&1
export JITBENCH_CACHE=/tmp/cache PYTHONUNBUFFERED=1
for run in new1 old1 new2 old2; do
  root=/tmp/${run%?}
  t0=$(date +%s.%N)
  PYTHONPATH=$root timeout 125 python3 -m jitbench run --device gpu --framework jax --size quick \
    --no-report --out /tmp/r/$run > /tmp/r-$run.log 2>&1
  rc=$?
  echo "$run rc=$rc wall=$(awk "BEGIN{print $(date +%s.%N) - $t0}")" >> $OUT/walls.txt
  tail -4 /tmp/r-$run.log >> $OUT/walls.txt
done
for run in new1 old1 new2 old2; do
  python3 docs/lab/make-bench-time/run_time_and_trust.py /tmp/r/$run >> $OUT/breakdown.txt 2>&1
done
(cd /tmp && tar -czf $OUT/runs.tgz r r-*.log)
cat $OUT/walls.txt $OUT/breakdown.txt
