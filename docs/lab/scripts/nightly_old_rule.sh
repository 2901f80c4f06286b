#!/usr/bin/env bash
# the rule of the session's start (e856da0) on the recorded corpora
cd /tmp/post
rm -rf oldtree oldlib
git -C /work/main worktree add -f /tmp/post/oldtree e856da0 >/dev/null 2>&1
/work/main/.venv/bin/python -m pip install -q --no-deps --no-build-isolation --target /tmp/post/oldlib /tmp/post/oldtree 2>/dev/null
for c in /work/main/tests/fixtures/nightly-corpus/corpus-default-profile.json.gz A.json.gz B.json.gz AB.json.gz; do
  echo "== $c"; PYTHONPATH=/tmp/post/oldlib /work/main/.venv/bin/python -m jitbench nightly --evaluate $c | sed -n 5p
  PYTHONPATH=/tmp/post/oldlib /work/main/.venv/bin/python -m jitbench nightly --evaluate $c --json > old-$(basename $c .json.gz).json
done
git -C /work/main worktree remove --force /tmp/post/oldtree
