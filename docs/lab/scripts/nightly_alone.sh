#!/usr/bin/env bash
# (lab script: the corpus of docs/lab/nightly-processes.md "The shipped night alone"; paths of that session)
# 30 nights of the shipped night alone on the host (stable profile, one process, core 0 by the
# profile), nothing beside it; then three planted nights, each on a fresh copy of those 30 nights.
cd /tmp/alone
PY=/work/main/.venv/bin/python
export PYTHONPATH=/tmp/snap9
COMMON="--suite matmul_relu,mmd --size quick --device cpu"
mkdir -p results logs
night() {  # label cmd...
  local id=$1; shift
  local t0=$(date +%s.%N)
  "$@" > logs/$id.out 2> logs/$id.err
  local rc=$?
  echo "$id $(date -u +%H:%M:%S) rc=$rc wall=$(echo "$(date +%s.%N) - $t0" | bc)" >> nights.log
}
for i in $(seq -w 1 30); do
  night s$i $PY -m jitbench nightly $COMMON --results results --reports reports --run-id s$i
done
for k in 1 2 3; do
  rm -rf p$k && mkdir -p p$k/results
  cp -r --no-dereference results/s* p$k/results/
  JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-cpu-float32-n512-d64=x1.1' night planted$k \
    $PY -m jitbench nightly $COMMON --results p$k/results --reports p$k/reports --run-id planted$k
done
echo done >> nights.log
