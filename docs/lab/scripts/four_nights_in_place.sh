#!/usr/bin/env bash
# usage: four_nights_in_place.sh [WORKDIR]; jitbench frozen in /tmp/fz, numpy 2.4.5 in /tmp/np-other
# four nights as docs/nightly.md writes the CPU trial, jitbench frozen at HEAD
cd "${1:-/tmp/tn}"
PY=${PY:-/work/main/.venv/bin/python}
ARGS="--results results --reports reports --suite matmul_relu --framework jax --variant fused --size quick --device cpu"
night() {  # name, extra env
  name=$1; shift
  start=$(date +%s)
  env "$@" PYTHONPATH=/tmp/fz${EXTRA:+:$EXTRA} $PY -m jitbench nightly $ARGS > $name.out 2>&1
  rc=$?
  echo "$name exit=$rc wall=$(( $(date +%s) - start ))s"
}
EXTRA= night n1
EXTRA=/tmp/np-other night n2
EXTRA= night n3 JITBENCH_TEST_SLOWDOWN='matmul_relu-fused-jax-jit-cpu-float32-*=x1.3'
EXTRA= night n4 JITBENCH_TEST_SLOWDOWN='matmul_relu-fused-jax-jit-cpu-float32-*=x1.3'
