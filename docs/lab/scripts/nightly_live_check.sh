#!/usr/bin/env bash
# the live check with the new code: on the 30 recorded nights of two processes, 5 unchanged
# nights, then one with a planted 10% step; two nights of today's nightly (the default profile,
# one process) alternating with the first ones, for the cost side by side
cd /tmp/post
NEW=/work/main/.venv/bin/python
COMMON="--suite matmul_relu,mmd --size quick --device cpu"
rm -rf live old && mkdir -p live/results old/results logs
for d in A/results/*; do cp -r --no-dereference $d live/results/; cp -r --no-dereference $d old/results/; done  # symlinked nights
night() {  # label cmd...
  local id=$1; shift
  local t0=$(date +%s.%N)
  "$@" > logs/$id.out 2> logs/$id.err
  local rc=$?
  echo "$id $(date -u +%H:%M:%S) rc=$rc wall=$(echo "$(date +%s.%N) - $t0" | bc)" >> live.log
}
for i in 1 2 3 4 5; do
  night new$i $NEW -m jitbench nightly $COMMON --results live/results --reports live/reports --run-id new$i
  case $i in 2|4) night old$i env PYTHONPATH=/tmp/rec/lib $NEW -m jitbench nightly $COMMON --process-profile default --results old/results --reports old/reports --run-id old$i ;; esac
done
JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-cpu-float32-n512-d64=x1.1' night planted $NEW -m jitbench nightly $COMMON --results live/results --reports live/reports --run-id planted
echo done >> live.log
