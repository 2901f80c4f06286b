#!/usr/bin/env bash
# SLURM: one night of jitbench over a job array of 4 GPU nodes. Submit from a login node:
#   STATE=/shared/jitbench examples/nightly-slurm.sh
# (e.g. from cron). Every step is a jitbench command (docs/nightly.md, "A recipe to copy").
# $STATE must be on a file system every node sees at the same path: it holds the two
# environments (envs/a, envs/b), the history (results/), the pages (reports/) and a small
# environment with jitbench installed that drives the nights (driver/).
# Never two nights at once: the prepare and judge jobs of every night share one --job-name and
# wait on --dependency=singleton, so a night submitted while the last one runs waits for its
# judge (which waits for its shards). The shards have a name of their own: singleton would run
# an array's tasks one at a time, and the shards must run at once, one per node.
# Every job has a time limit (--time; PREPARE_TIME, SHARD_TIME, JUDGE_TIME to change them): a
# hung job is stopped (SIGTERM: the rows measured are kept, the night is not the reference) and
# the next night can start.
set -euo pipefail
STATE=${STATE:?set STATE to the shared folder}
REQUIREMENTS=${REQUIREMENTS:-$(dirname "$0")/nightly-requirements.txt}
SHARDS=${SHARDS:-4}
PREPARE_TIME=${PREPARE_TIME:-01:00:00}   # pip installs one environment
SHARD_TIME=${SHARD_TIME:-08:00:00}       # a quarter of the full grid, and its A/B on a change night
JUDGE_TIME=${JUDGE_TIME:-06:00:00}       # merge, then suspects re-measured in fresh processes
NIGHT=night-$(date -u +%Y%m%d-%H%M%S)
JITBENCH=$STATE/driver/bin/jitbench
test -x "$JITBENCH" || { python3 -m venv "$STATE/driver" &&
  "$STATE/driver/bin/pip" install --quiet --upgrade -r "$REQUIREMENTS"; }
common=(--job-name=jitbench-nightly --parsable)

prepare=$(sbatch "${common[@]}" --dependency=singleton --time="$PREPARE_TIME" --wrap \
  "$JITBENCH nightly --environments $STATE/envs --requirements $REQUIREMENTS \
   --results $STATE/results --prepare")

shards=$(sbatch --job-name=jitbench-nightly-shard --parsable --dependency=afterok:"$prepare" \
  --array=1-"$SHARDS" --time="$SHARD_TIME" --gres=gpu:1 --wrap \
  "$JITBENCH nightly --environments $STATE/envs --results $STATE/results \
   --reports $STATE/reports --size full --shard \$SLURM_ARRAY_TASK_ID/$SHARDS --run-id $NIGHT")

# afterany: a shard that failed midway still delivers every row it measured; the exit code of
# this last job is the night's (0 no regression, 1 a regression, 3 undecided: not a pass)
sbatch "${common[@]}" --dependency=afterany:"$shards",singleton --time="$JUDGE_TIME" \
  --gres=gpu:1 --wrap \
  "$JITBENCH merge $STATE/results/shards/*/$NIGHT -o $STATE/results/$NIGHT && \
   $JITBENCH nightly --environments $STATE/envs --results $STATE/results \
   --reports $STATE/reports --size full --no-run"
echo "submitted $NIGHT: prepare $prepare, shards $shards"
