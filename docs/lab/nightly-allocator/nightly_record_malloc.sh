#!/usr/bin/env bash
# Two streams side by side, as the fixture README's first recording: stream A2 on core 0 with
# the stable profile of this code (core, hash seed, glibc's allocator keeping freed memory;
# installed apart in RECORDING/lib), a default-profile night after every 10th for the cost;
# then 5 more unchanged nights and a planted one (the live check). Stream B2 on core 1 repeats
# stream B exactly (the recording's code in $OLD_LIB, the stable profile of then): a control
# for how much the host itself changed since stream B.
# usage: [OLD_LIB=DIR] nightly_record_malloc.sh RECORDING A | B
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
cd "${1:?usage: [OLD_LIB=DIR] nightly_record_malloc.sh RECORDING A|B}"; shift
PY=${PY:-$REPO/.venv/bin/python}
COMMON="--suite matmul_relu,mmd --size quick --device cpu"
mkdir -p logs
night() {  # log root run-id extra...
  local log=$1 root=$2 id=$3; shift 3
  local t0=$(date +%s.%N)
  "${PRE[@]}" $PY -m jitbench nightly $COMMON --results $root/results --reports $root/reports \
    --run-id $id "$@" > logs/$id.out 2> logs/$id.err
  local rc=$?
  echo "$id $(date -u +%H:%M:%S) rc=$rc wall=$(echo "$(date +%s.%N) - $t0" | bc)" >> $log
}
if [ "$1" = A ]; then
  export PYTHONPATH=$(pwd)/lib; PRE=()
  for i in $(seq -w 1 30); do
    night nightsA2.log A2 s$i
    case $i in 10|20|30) night nightsA2.log default d$i --process-profile default ;; esac
  done
  touch stopB2
  for i in 31 32 33 34 35; do night nightsA2.log A2 s$i; done
  JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-cpu-float32-n512-d64=x1.1' \
    night nightsA2.log A2 p36
  echo done >> nightsA2.log
else
  export PYTHONPATH=${OLD_LIB:?set OLD_LIB=DIR, the code of the recording installed apart}; PRE=(taskset -c 1)
  for i in $(seq -w 1 40); do
    [ -e stopB2 ] && break
    night nightsB2.log B2 b$i
  done
  echo done >> nightsB2.log
fi
