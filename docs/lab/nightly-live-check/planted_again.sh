#!/usr/bin/env bash
# More planted nights on one history: live7's (stream A's 30 nights and 5 unchanged live nights,
# under /tmp/post/live7) without its planted night, then one planted night, twice, each on a
# fresh copy. The code under test installed apart in /tmp/snap8.
cd /tmp/post
for k in 2 3; do
  rm -rf p$k && mkdir -p p$k/results p$k/logs
  for d in live7/results/*; do [ "$(basename $d)" = planted ] || cp -r --no-dereference $d p$k/results/; done
  t0=$(date +%s.%N)
  JITBENCH_TEST_SLOWDOWN='mmd-default-jax-jit-cpu-float32-n512-d64=x1.1' PYTHONPATH=/tmp/snap8 \
    "${PY:-$(cd "$(dirname "$0")/../../.." && pwd)/.venv/bin/python}" -m jitbench nightly --suite matmul_relu,mmd --size quick --device cpu \
    --results p$k/results --reports p$k/reports --run-id planted$k > p$k/logs/out 2> p$k/logs/err
  echo "planted$k $(date -u +%H:%M:%S) rc=$? wall=$(echo "$(date +%s.%N) - $t0" | bc)" >> planted_again.log
done
echo done >> planted_again.log
