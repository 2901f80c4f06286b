#!/usr/bin/env bash
# make bench's run (`jitbench run --device cpu --size quick`), two versions of jitbench side by
# side in one session, alternating: old new old new. Each version is frozen apart
# (git archive of bench/ and suites/ into DIR/jitbench; an old version that finds its workloads
# by entry points needs a .dist-info in DIR that registers them) and run with PYTHONPATH=DIR.
#   docs/lab/make-bench-time/make_bench_side_by_side.sh OLD_DIR NEW_DIR OUT
set -u
OLD=$1 NEW=$2 OUT=$3
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT"
for i in 1 2; do
  for which in old new; do
    dir=$OLD; [ "$which" = new ] && dir=$NEW
    start=$(date +%s.%N)
    PYTHONPATH=$dir $PY -m jitbench run --device cpu --size quick --out "$OUT/results-$which" \
        --reports "$OUT/reports-$which" > "$OUT/$which-$i.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    first=$(grep -m1 "faster than\|slower than\|same against\|unresolved against" \
            "$OUT/$which-$i.log" | cut -c1-60)
    echo "$which run $i rc=$rc wall=$(echo "$end - $start" | bc) s first verdict: $first"
  done
done
