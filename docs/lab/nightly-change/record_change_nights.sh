#!/usr/bin/env bash
# Record a corpus of change nights on this host (tests/fixtures/nightly-corpus/change-nights.json.gz):
# one unchanged night of the quick JAX MMD float32 CPU grid, then N change nights, each differing from
# every night before by an inert change (the test hook at x1 on the two float32 n512 groups,
# spelled differently each night: x1.0, x1.00, ...), each measuring exactly PAIRS (12) process pairs of the touched
# groups (--change-pairs PAIRS) so that the rule can be replayed as far as it would go.
# Then UNCHANGED (run folders of unchanged nights of the shipped command, e.g. the live check's)
# are copied in, so the corpus's cost of a night is the shipped night's.
# Usage: docs/lab/nightly-change/record_change_nights.sh ROOT N [PAIRS] [UNCHANGED_DIR...]
set -u
ROOT=${1:?root folder}; N=${2:?nights}; PAIRS=${3:-12}; shift 3 2>/dev/null || shift $#
CORPUS=$ROOT/change-nights.json.gz
GLOB='mmd-*-jax-*-cpu-float32-n512-d64'
JB=${JB:-.venv/bin/jitbench}
ARGS=(--suite mmd --framework jax --dtype float32 --device cpu --size quick
      --results "$ROOT/results" --reports "$ROOT/reports" --change-pairs "$PAIRS")
mkdir -p "$ROOT"
[ -d "$ROOT/results/c00" ] || "$JB" nightly "${ARGS[@]}" --run-id c00 > "$ROOT/c00.log" 2>&1
for i in $(seq 1 "$N"); do
  name=$(printf 'c%02d' "$i")
  [ -d "$ROOT/results/$name" ] && continue
  spell="x1.$(printf '%0*d' "$i" 0)"  # x1.0, x1.00, ...: every night differs from any before
  t0=$(date +%s)
  JITBENCH_TEST_SLOWDOWN="$GLOB=$spell" "$JB" nightly "${ARGS[@]}" --run-id "$name" \
      > "$ROOT/$name.log" 2>&1
  echo "$name rc=$? wall=$(( $(date +%s) - t0 ))s $(grep -E '^changed' "$ROOT/$name.log" | cut -c1-200)"
done
for d in "$@"; do cp -r "$d" "$ROOT/results/"; done
"$JB" nightly --results "$ROOT/results" --change-corpus "$CORPUS" --evaluate "$CORPUS" --json
