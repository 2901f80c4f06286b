#!/usr/bin/env bash
# (lab script: the corpora and evaluations of docs/lab/nightly-processes.md; paths of that session)
# corpora of the recorded nights (new code), their evaluation and scatter
set -x
cd /tmp/post
PY=/work/main/.venv/bin/python
rm -rf A B AB && mkdir -p A/results B/results
for d in /tmp/rec/stable/results/s*; do ln -s $d A/results/$(basename $d); done
for d in /tmp/rec/B/results/b*; do ln -s $d B/results/$(basename $d); done
n=$(ls A/results | wc -l); m=$(ls B/results | wc -l)
$PY /work/main/docs/lab/scripts/pair_nights.py A/results B/results AB/results
$PY -m jitbench nightly --results A/results --corpus A.json.gz
$PY -m jitbench nightly --results B/results --corpus B.json.gz
$PY -m jitbench nightly --results AB/results --corpus AB.json.gz
for c in /work/main/tests/fixtures/nightly-corpus/corpus.json.gz A.json.gz B.json.gz AB.json.gz; do
  echo "== $c"; $PY -m jitbench nightly --evaluate $c
  $PY -m jitbench nightly --evaluate $c --json > $(basename $c .json.gz).eval.json
done
for q in ratio jit judged; do
  $PY /work/main/docs/lab/scripts/corpus_scatter.py --quantity=$q old=/work/main/tests/fixtures/nightly-corpus/corpus.json.gz one_core0=A.json.gz one_core1=B.json.gz two=AB.json.gz > scatter-$q.md
done
for c in A B AB; do $PY /work/main/docs/lab/scripts/detector_sweep.py $c.json.gz --z 2.5,3 --floor 0.015,0.02 > sweep-$c.md; done
