#!/usr/bin/env bash
# the rule of the session's start (e856da0) on the recorded corpora
# usage: nightly_old_rule.sh WORKDIR  (the folder nightly_corpora.sh wrote: A, B, AB corpora)
set -u
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
cd "${1:?usage: nightly_old_rule.sh WORKDIR}"
W=$(pwd); PY=${PY:-$REPO/.venv/bin/python}
rm -rf oldtree oldlib
git -C "$REPO" worktree add -f $W/oldtree e856da0 >/dev/null 2>&1
$PY -m pip install -q --no-deps --no-build-isolation --target $W/oldlib $W/oldtree 2>/dev/null
for c in $REPO/tests/fixtures/nightly-corpus/corpus-default-profile.json.gz A.json.gz B.json.gz AB.json.gz; do
  echo "== $c"; PYTHONPATH=$W/oldlib $PY -m jitbench nightly --evaluate $c | sed -n 5p
  PYTHONPATH=$W/oldlib $PY -m jitbench nightly --evaluate $c --json > old-$(basename $c .json.gz).json
done
git -C "$REPO" worktree remove --force $W/oldtree
