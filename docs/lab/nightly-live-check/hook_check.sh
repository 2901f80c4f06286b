#!/usr/bin/env bash
# Does the planted-slowdown hook (JITBENCH_TEST_SLOWDOWN='<case>=x1.1') change more than the
# step? N fresh processes each, alternating with and without it, of the JAX MMD float32 group
# in the stable profile; then, per process, the n512 jit row's speedup and its interval's sigma.
# LIB: this code installed apart (pip install --no-deps --no-build-isolation --target LIB .).
set -u
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
OUT=${OUT:?set OUT=DIR, the folder the runs go to}; N=${N:-6}; PY=${PY:-$REPO/.venv/bin/python}
CASE=mmd-default-jax-jit-cpu-float32-n512-d64
mkdir -p "$OUT"
for i in $(seq 1 "$N"); do
  for arm in plain hook; do
    if [ $arm = hook ]; then export JITBENCH_TEST_SLOWDOWN="$CASE=x1.1"
    else unset JITBENCH_TEST_SLOWDOWN; fi
    PYTHONPATH=${LIB:-} $PY -m jitbench run --suite mmd --variant default --framework jax \
      --dtype float32 --device cpu --size quick --process-profile stable --precision 0.03 \
      --no-report --out "$OUT/res" --run-id $arm-$i > "$OUT/log-$arm-$i" 2>&1
  done
done
$PY - "$OUT" "$N" "$CASE" <<'PY'
import json, math, sys
out, n, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for arm in ("plain", "hook"):
    got = []
    for i in range(1, n + 1):
        for line in open(f"{out}/res/{arm}-{i}/results.jsonl"):
            r = json.loads(line)
            if r.get("case_id") == case:
                sigma = math.log(r["verdict_ci_high"] / r["verdict_ci_low"]) / 3.92
                got.append(f"{r['verdict_speedup']:.3f} ({100 * sigma:.1f}%)")
    print(arm, "speedup (interval sigma):", ", ".join(got))
PY
