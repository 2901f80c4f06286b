#!/usr/bin/env bash
# usage: FROZEN=DIR OTHER_NUMPY=DIR four_nights_in_place.sh WORKDIR
# four nights as docs/nightly.md writes the CPU trial, jitbench frozen at HEAD
# FROZEN: jitbench installed apart (pip install --no-deps --no-build-isolation --target DIR .);
# OTHER_NUMPY: another numpy installed apart (pip install --target DIR numpy==2.4.5)
set -u
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
cd "${1:?usage: FROZEN=DIR OTHER_NUMPY=DIR four_nights_in_place.sh WORKDIR}"
PY=${PY:-$REPO/.venv/bin/python}
ARGS="--results results --reports reports --suite matmul_relu --framework jax --variant fused --size quick --device cpu"
night() {  # name, extra env
  name=$1; shift
  start=$(date +%s)
  env "$@" PYTHONPATH=$FROZEN${EXTRA:+:$EXTRA} $PY -m jitbench nightly $ARGS > $name.out 2>&1
  rc=$?
  echo "$name exit=$rc wall=$(( $(date +%s) - start ))s"
}
EXTRA= night n1
EXTRA=$OTHER_NUMPY night n2
EXTRA= night n3 JITBENCH_TEST_SLOWDOWN='matmul_relu-fused-jax-jit-cpu-float32-*=x1.3'
EXTRA= night n4 JITBENCH_TEST_SLOWDOWN='matmul_relu-fused-jax-jit-cpu-float32-*=x1.3'
