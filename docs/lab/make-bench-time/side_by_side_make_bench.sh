#!/bin/bash
# old (before issue 47's changes) and new (HEAD) alternating, 2 runs each, make bench's command
cd /tmp
for i in 1 2; do
  for arm in old new; do
    root=/tmp/frozenBase; [ $arm = new ] && root=/tmp/frozenNew
    s=$(date +%s.%N)
    JITBENCH_CACHE=/tmp/sbs-cache PYTHONPATH=$root "${PY:-$(cd "$(dirname "$0")/../../.." && pwd)/.venv/bin/python}" -m jitbench run --device cpu --size quick --no-report --out /tmp/sbs/$arm$i > /tmp/sbs/$arm$i.log 2>&1
    e=$(date +%s.%N)
    echo "$arm$i $(echo "$e - $s" | bc)" >> /tmp/sbs/walls.txt
  done
done
echo done >> /tmp/sbs/walls.txt
