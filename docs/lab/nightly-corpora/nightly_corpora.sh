#!/usr/bin/env bash
# (lab script: the corpora and evaluations of docs/lab/nightly-corpora/index.md)
# usage: nightly_corpora.sh WORKDIR STREAM_A STREAM_B  (each stream a results folder of nights:
# A's named s*, B's b*)
# corpora of the recorded nights (new code), their evaluation and scatter
set -xu
REPO=$(cd "$(dirname "$0")/../../.." && pwd)  # this repository, wherever it is cloned
A_RESULTS=$(cd "$2" && pwd); B_RESULTS=$(cd "$3" && pwd)
mkdir -p "$1" && cd "$1"
PY=${PY:-$REPO/.venv/bin/python}
rm -rf A B AB && mkdir -p A/results B/results
for d in $A_RESULTS/s*; do ln -s $d A/results/$(basename $d); done
for d in $B_RESULTS/b*; do ln -s $d B/results/$(basename $d); done
n=$(ls A/results | wc -l); m=$(ls B/results | wc -l)
$PY $REPO/docs/lab/nightly-corpora/pair_nights.py A/results B/results AB/results
$PY -m jitbench nightly --results A/results --corpus A.json.gz
$PY -m jitbench nightly --results B/results --corpus B.json.gz
$PY -m jitbench nightly --results AB/results --corpus AB.json.gz
for c in $REPO/tests/fixtures/nightly-corpus/corpus.json.gz A.json.gz B.json.gz AB.json.gz; do
  echo "== $c"; $PY -m jitbench nightly --evaluate $c
  $PY -m jitbench nightly --evaluate $c --json > $(basename $c .json.gz).eval.json
done
for q in ratio jit judged; do
  $PY $REPO/docs/lab/nightly-corpora/corpus_scatter.py --quantity=$q old=$REPO/tests/fixtures/nightly-corpus/corpus.json.gz one_core0=A.json.gz one_core1=B.json.gz two=AB.json.gz > scatter-$q.md
done
for c in A B AB; do $PY $REPO/docs/lab/nightly-corpora/detector_sweep.py $c.json.gz --z 2.5,3 --floor 0.015,0.02 > sweep-$c.md; done
