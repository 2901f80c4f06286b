#!/bin/bash
# frozen copies: /tmp/fA = the code before (git archive; bench -> jitbench, suites -> jitbench/suites),
# /tmp/fB = with the worker leaving without the teardown. old (A: the interpreter's teardown) and new (the worker leaves at once), alternating
cd /tmp
for i in 1 2 3; do for arm in A B; do
  s=$(date +%s.%N)
  PYTHONPATH=/tmp/f$arm /work/main/.venv/bin/python -m jitbench run --suite matmul_relu --variant fused --size quick --device cpu --budget 0.5 --no-calibrate --no-report --out /tmp/exitab/$arm$i > /dev/null 2>&1
  echo "$arm$i $(awk "BEGIN{print $(date +%s.%N) - $s}")"
done; done
