#!/usr/bin/env bash
# (lab script: the corpus of docs/lab/nightly-alone/index.md "The shipped night alone")
# usage: LIB=DIR nightly_alone.sh WORKDIR  (LIB: jitbench installed apart, pip install --no-deps
# --no-build-isolation --target DIR .)
# 30 nights of the shipped night alone on the host (stable profile, one process, core 0 by the
# profile), nothing beside it; then three planted nights, each on a fresh copy of those 30 nights.
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
mkdir -p "${1:?usage: LIB=DIR nightly_alone.sh WORKDIR}" && cd "$1"
PY=${PY:-$REPO/.venv/bin/python}
export PYTHONPATH=${LIB:?set LIB=DIR, jitbench installed apart}
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
