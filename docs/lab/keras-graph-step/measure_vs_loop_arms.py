"""``measure_vs_loop.py`` in fresh processes under two or more arms (environment variables, or a
CPU set), the arms alternating process by process, each arm pooled as
``measure_vs_loop_pooled.py`` pools (two-level bootstrap over processes, then rounds).

    python docs/lab/keras-graph-step/measure_vs_loop_arms.py PROCESSES ROUNDS OUT_DIR ARM [ARM ...]

An arm: ``name`` alone (the environment as it is), or ``name:VAR=value,VAR=value``; the
variable ``CPUS`` pins the process to those CPUs (``taskset -c``). E.g. one vCPU against two,
the Keras step only::

    STEPS=keras python docs/lab/keras-graph-step/measure_vs_loop_arms.py 5 8 /tmp/cores one:CPUS=0 two

Each process's rounds are kept in ``OUT_DIR/<arm>/process-K.json``; with ``PROCESSES`` 0 the
files already there are pooled again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402
from labkit.pooled import MEASURE_VS_LOOP, report  # noqa: E402

usage(__doc__)


def parse_arm(text: str) -> tuple[str, dict[str, str]]:
    name, _, fields = text.partition(":")
    return name, dict(f.split("=", 1) for f in fields.split(",") if f)


def main() -> None:
    processes, rounds, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    arms = [parse_arm(a) for a in sys.argv[4:]]
    for name, _ in arms:
        (out / name).mkdir(parents=True, exist_ok=True)
    for k in range(processes):
        for name, env_vars in (arms if k % 2 == 0 else arms[::-1]):
            print(f"process {k + 1}/{processes}, arm {name}", flush=True)
            env = dict(os.environ, **{v: x for v, x in env_vars.items() if v != "CPUS"},
                       RATIOS_JSON=str(out / name / f"process-{k}.json"))
            pin = ["taskset", "-c", env_vars["CPUS"]] if "CPUS" in env_vars else []
            subprocess.run(pin + [sys.executable, str(MEASURE_VS_LOOP), str(rounds)],
                           env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    for name, _ in arms:
        print(f"\n=== arm {name}")
        report(out / name)


if __name__ == "__main__":
    main()
