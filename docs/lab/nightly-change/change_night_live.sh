#!/usr/bin/env bash
# The change night as a user runs it on the 2-core host: five unchanged nights of the quick
# matmul_relu+mmd grid on a fresh history, a planted x1.1 night, then N planted x1.05 nights,
# each on its own copy of the five unchanged nights (so each is measured against an unplanted
# last good night); prints each night's exit code, wall time and the summary's change note.
# Usage: docs/lab/nightly-change/change_night_live.sh ROOT [N_x105]
set -u
ROOT=${1:?root folder}; N=${2:-5}
CASE=mmd-default-jax-jit-cpu-float32-n512-d64
JB=${JB:-.venv/bin/jitbench}
night() {  # history folder, night name, then env assignments
  local at=$1 name=$2; shift 2
  local t0=$(date +%s)
  env "$@" "$JB" nightly --suite matmul_relu,mmd --size quick --results "$at/results" \
      --reports "$at/reports" --run-id "$name" > "$ROOT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc wall=$(( $(date +%s) - t0 ))s $(grep -E '^(changed|nothing changed|REGRESSION|no confirmed)' "$ROOT/$name.log" | cut -c1-300 | tr '\n' ' ')"
}
mkdir -p "$ROOT/h"
for i in 1 2 3 4 5; do night "$ROOT/h" "u$i"; done
cp -r "$ROOT/h" "$ROOT/h-clean"
night "$ROOT/h" p10 "JITBENCH_TEST_SLOWDOWN=$CASE=x1.1"
for i in $(seq 1 "$N"); do
  cp -r "$ROOT/h-clean" "$ROOT/h05-$i"
  night "$ROOT/h05-$i" "p05-$i" "JITBENCH_TEST_SLOWDOWN=$CASE=x1.05"
done
