#!/usr/bin/env bash
# The live check: on the 30 recorded nights of stream A (/tmp/post/A/results, the fixture
# README's recording), 5 unchanged nights, then one with a planted 10% step, in a copy of that
# history (OUT, default live). SNAP: a snapshot of the code under test installed apart
# (pip install --no-deps --no-build-isolation --target SNAP .), so the repository can change
# while it runs. WITH_OLD=1 adds two nights of the default profile in old/ between them, with
# the code at /tmp/rec/lib, for the cost side by side.
cd /tmp/post
OUT=${OUT:-live}
PY=${PY:-$(cd "$(dirname "$0")/../../.." && pwd)/.venv/bin/python}
NEW=(env ${SNAP:+PYTHONPATH=$SNAP} $PY)
COMMON="--suite matmul_relu,mmd --size quick --device cpu"
rm -rf $OUT && mkdir -p $OUT/results $OUT/logs
[ -n "$WITH_OLD" ] && rm -rf old && mkdir -p old/results
for d in A/results/*; do
  cp -r --no-dereference $d $OUT/results/
  [ -n "$WITH_OLD" ] && cp -r --no-dereference $d old/results/
done
night() {  # label cmd...
  local id=$1; shift
  local t0=$(date +%s.%N)
  "$@" > $OUT/logs/$id.out 2> $OUT/logs/$id.err
  local rc=$?
  echo "$id $(date -u +%H:%M:%S) rc=$rc wall=$(echo "$(date +%s.%N) - $t0" | bc)" >> $OUT.log
}
for i in $(seq 1 ${NIGHTS:-5}); do
  night new$i "${NEW[@]}" -m jitbench nightly $COMMON --results $OUT/results \
    --reports $OUT/reports --run-id new$i
  if [ -n "$WITH_OLD" ]; then case $i in 2|4) night old$i env PYTHONPATH=/tmp/rec/lib $PY \
    -m jitbench nightly $COMMON --process-profile default --results old/results \
    --reports old/reports --run-id old$i ;; esac; fi
done
JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-cpu-float32-n512-d64=x1.1' night planted \
  "${NEW[@]}" -m jitbench nightly $COMMON --results $OUT/results --reports $OUT/reports \
  --run-id planted
echo done >> $OUT.log
