#!/usr/bin/env bash
# (lab script: the corpora of nightly_record_malloc.sh's streams, their evaluation and scatter
# beside stream A and B's of the first recording)
# usage: nightly_corpora_malloc.sh RECORDING  (the folder nightly_record_malloc.sh wrote: A2/, B2/)
set -xu
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
cd "${1:?usage: nightly_corpora_malloc.sh RECORDING}"
REC=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
FIX=$REPO/tests/fixtures/nightly-corpus
rm -rf post && mkdir -p post/A2/results post/B2/results
for i in $(seq -w 1 30); do
  ln -s $REC/A2/results/s$i post/A2/results/s$i
  ln -s $REC/B2/results/b$i post/B2/results/b$i
done
$PY -m jitbench nightly --results post/A2/results --corpus post/A2.json.gz
$PY -m jitbench nightly --results post/B2/results --corpus post/B2.json.gz
for c in post/A2.json.gz post/B2.json.gz; do
  echo "== $c"; $PY -m jitbench nightly --evaluate $c
  $PY -m jitbench nightly --evaluate $c --json > ${c%.json.gz}.eval.json
done
for q in ratio jit judged; do
  $PY $REPO/docs/lab/nightly-corpora/corpus_scatter.py --quantity=$q A=$FIX/corpus.json.gz \
    A2=post/A2.json.gz B=$FIX/corpus-pinned-one-process-core1.json.gz B2=post/B2.json.gz \
    > post/scatter-$q.md
done
for c in A2 B2; do
  $PY $REPO/docs/lab/nightly-corpora/detector_sweep.py post/$c.json.gz --z 2.5,3 \
    --floor 0.01,0.015,0.02 > post/sweep-$c.md
done
