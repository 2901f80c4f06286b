#!/usr/bin/env bash
# On a lent GPU machine (no package index, no TensorFlow): where the GPU nightly's fresh-process
# noise starts. jitbench installed apart, its doctor, then the JAX MMD default float32 quick grid
# on the GPU in fresh processes, the settings `default` (as a user runs it, what a GPU night
# runs today) and `stable` (one core, hash seed 0: the CPU nights' profile) alternating;
# the scatter table and every process's rows to $OUT.
# usage (device tool, repository root): bash docs/lab/nightly-on-a-gpu/gpu_process_noise.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{ python3 --version; nvidia-smi -L; nproc; python3 -c "import jax; print(jax.__version__, jax.devices())"; } \
  > $OUT/env.txt 2>&1
pip install -q --no-deps --no-index --no-build-isolation --target /tmp/jb . > $OUT/install.txt 2>&1
export PYTHONPATH=/tmp/jb
[ "${DOCTOR:-1}" = 0 ] || timeout 60 python3 -m jitbench doctor --device gpu > $OUT/doctor.txt 2>&1; echo "doctor rc=$?" >> $OUT/doctor.txt
timeout ${LIMIT:-420} python3 docs/lab/process-noise/process_noise.py --processes ${N:-6} \
  --settings default,stable --deadline ${DEADLINE:-300} --out /tmp/pn -- \
  --suite mmd --variant default --framework jax --dtype float32 --device gpu --size quick \
  > $OUT/table.md 2> $OUT/progress.txt
echo "process_noise rc=$?" >> $OUT/progress.txt
mkdir -p /tmp/rows
for d in /tmp/pn/*/; do n=$(basename $d); cp $d/results.jsonl /tmp/rows/$n.jsonl 2>/dev/null; done
tar czf $OUT/rows.tgz -C /tmp rows
