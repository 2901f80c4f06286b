#!/usr/bin/env bash
# Change nights as a user runs them, duet pairs beside alternating ones in one session: each
# night on its own copy of a history of unchanged nights of the quick matmul_relu+mmd grid
# (CLEAN, e.g. change_night_live.sh's h-clean), the planted step (test hook) on one JIT case,
# run once with --pairing duet and once with --pairing alternating, the order swapped from one
# step to the next. x1.0 is an A/A night: a change of the environment that changes nothing.
# Prints each night's exit code, wall time and what it said.
# Usage: JB=.venv/bin/jitbench docs/lab/duet-pairs/duet_nights.sh ROOT CLEAN [STEPS...]
set -u
ROOT=${1:?root folder}; CLEAN=${2:?history of unchanged nights}; shift 2
STEPS=${*:-x1.1 x1.05 x1.0}
CASE=mmd-default-jax-jit-cpu-float32-n512-d64
JB=${JB:-.venv/bin/jitbench}
mkdir -p "$ROOT"
k=0
for step in $STEPS; do
  if [ $((k % 2)) -eq 0 ]; then order="duet alternating"; else order="alternating duet"; fi
  k=$((k + 1))
  for pairing in $order; do
    name="$step-$pairing"
    [ -d "$ROOT/$name" ] && continue
    cp -r "$CLEAN" "$ROOT/$name"
    t0=$(date +%s)
    JITBENCH_TEST_SLOWDOWN="$CASE=$step" "$JB" nightly --suite matmul_relu,mmd --size quick \
        --results "$ROOT/$name/results" --reports "$ROOT/$name/reports" --run-id night \
        --pairing "$pairing" > "$ROOT/$name.log" 2>&1
    rc=$?
    echo "$name rc=$rc wall=$(( $(date +%s) - t0 ))s $(grep -E '^(changed|REGRESSION|UNDECIDED|no confirmed|smaller)' "$ROOT/$name.log" | cut -c1-400 | tr '\n' ' ')"
  done
done
