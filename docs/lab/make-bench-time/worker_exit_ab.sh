#!/bin/bash
# usage: worker_exit_ab.sh WORKDIR, holding frozen copies WORKDIR/fA = the code before (git
# archive; bench -> jitbench, suites -> jitbench/suites), WORKDIR/fB = with the worker leaving
# without the teardown. old (A: the interpreter's teardown) and new (the worker leaves at once),
# alternating
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
cd "${1:?usage: worker_exit_ab.sh WORKDIR}"
W=$(pwd); PY=${PY:-$REPO/.venv/bin/python}
for i in 1 2 3; do for arm in A B; do
  s=$(date +%s.%N)
  PYTHONPATH=$W/f$arm $PY -m jitbench run --suite matmul_relu --variant fused --size quick --device cpu --budget 0.5 --no-calibrate --no-report --out $W/exitab/$arm$i > /dev/null 2>&1
  echo "$arm$i $(awk "BEGIN{print $(date +%s.%N) - $s}")"
done; done
