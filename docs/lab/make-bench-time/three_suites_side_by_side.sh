#!/bin/bash
# The 3-suite quick grid of issue 64 (jitbench run --device cpu --size quick --suite
# matmul_relu,mmd,rnn --no-report), one run per arm, in the order given: NAME=DIR, DIR a
# jitbench installed with `pip install --no-deps --target DIR <checkout at a commit>`.
#   OUT=/tmp/sbs PY=.venv/bin/python three_suites_side_by_side.sh old1=/tmp/f56 new1=/tmp/fnew new2=/tmp/fnew old2=/tmp/f56
# Wall times and exit codes go to $OUT/walls.txt, each run to $OUT/NAME (phase_budget.py reads
# them); give each run its own NAME (a name's calibration cache is kept for its next run).
# SUITE= (empty) runs make bench's whole default grid instead of the three suites;
# FRAMEWORK=jax (or tf) only that framework's cases. CACHE=arm: one calibration cache per arm
# (NAME without its trailing digits: head1 and head2 share one), so only an arm's first run calibrates.
[ "$1" = "--help" ] && { sed -n 2,10p "$0"; exit 0; }
suite=${SUITE-matmul_relu,mmd,rnn}
args=(); [ -n "$suite" ] && args=(--suite "$suite")
[ -n "$FRAMEWORK" ] && args+=(--framework "$FRAMEWORK")
py=$(realpath -s "${PY:-$(cd "$(dirname "$0")/../../.." && pwd)/.venv/bin/python}")  # before the cd
out=${OUT:-/tmp/sbs64}; mkdir -p "$out"
cd "$out" || exit 2  # away from a checkout, whose egg-info would shadow DIR
for spec in "$@"; do
  name=${spec%%=*}; root=${spec#*=}
  s=$(date +%s.%N)
  cache=$name; [ "$CACHE" = arm ] && cache=${name%"${name##*[!0-9]}"}  # its trailing digits off
  [ -n "$cache" ] || cache=$name
  JITBENCH_CACHE=$out/cache-$cache PYTHONPATH=$root "$py" -m jitbench run --device cpu --size quick "${args[@]}" --no-report --out "$out/$name" > "$out/$name.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  echo "$name $(echo "$e - $s" | bc) rc=$rc" >> "$out/walls.txt"
done
