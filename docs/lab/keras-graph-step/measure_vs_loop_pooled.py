"""``measure_vs_loop.py`` in several fresh processes, one after another, pooled: the ratio
jitbench / loop per step and mode over every round of every process, with a 95% interval from a
two-level bootstrap (processes resampled, then rounds within each), since a round's scatter and a
process's own state both move the ratio.

    [STEPS=MLP,keras] python docs/lab/keras-graph-step/measure_vs_loop_pooled.py PROCESSES ROUNDS [OUT_DIR]

Each process's rounds are kept in ``OUT_DIR/process-K.json`` (default: a temporary folder); with
``PROCESSES`` 0 the files already in ``OUT_DIR`` are pooled again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402
from labkit.pooled import MEASURE_VS_LOOP, report  # noqa: E402

usage(__doc__)


def run(processes: int, rounds: int, out: Path) -> None:
    for k in range(processes):
        env = dict(os.environ, RATIOS_JSON=str(out / f"process-{k}.json"))
        print(f"process {k + 1}/{processes}", flush=True)
        subprocess.run([sys.executable, str(MEASURE_VS_LOOP), str(rounds)],
                       env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    processes, rounds = int(sys.argv[1]), int(sys.argv[2])
    out = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    run(processes, rounds, out)
    report(out)


if __name__ == "__main__":
    main()
