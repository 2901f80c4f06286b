"""Where a run's worker processes spend their seconds, by protocol phase, from a py-spy profile.

    py-spy record --subprocesses --idle -r 50 --format raw -o PROFILE.txt -- \\
        python -m jitbench run --device cpu --size quick --suite matmul_relu,mmd,rnn --no-report
    python docs/lab/make-bench-time/profile_phases.py PROFILE.txt [RATE]

RATE: the samples per second py-spy took (default 50). Each stack of a worker's main thread
goes to the innermost protocol phase it is in: first calls and warm-up
(``first_and_warmup``; the A/A twin's and the calibration's too), the pipelining probe, timed
samples (``take_sample``; the A/A twin's too), the untimed calls after a switch of mode,
synced rounds, the alone blocks, the float64 reference, the
output checks, the XLA insight (``capture``), the framework's import, and so on; the
calibration's groups are counted in the same phases as the cases'. Seconds per (worker,
phase), largest first.
"""

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)

# (text in a frame, phase): the innermost frame holding one of these names decides
PHASES = [("first_and_warmup (", "first call + warm-up"), ("run_rounds (", "rounds (bookkeeping)"),
          ("untimed_calls (", "untimed calls after a switch"), ("take_sample (", "timed samples"),
          ("run_synced (", "synced rounds"), ("_alone (", "alone blocks"),
          ("workload_reference (", "float64 reference"), ("workload_inputs (", "inputs"),
          ("Casework.__init__ (", "placing inputs"), ("Casework.check (", "output checks"),
          ("Casework.nojit (", "JIT-off answer"), ("capture (jitbench/xla", "XLA insight"),
          ("group_rows (", "row building"), ("SequentialStop", "stopping rule")]
WITHIN = [("_pipelined_loops (", "pipelining probe"), ("_alone (", "alone blocks")]


def phases(path: str, rate: float = 50.0) -> collections.Counter:
    seconds: collections.Counter = collections.Counter()
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        if not count.isdigit():
            continue
        worker = ("tf worker" if "jitbench.run.worker tf" in stack else
                  "jax worker" if "jitbench.run.worker jax" in stack else "parent")
        if worker != "parent" and "_run_module_as_main" not in stack:
            continue  # a worker's other threads (the framework's pools): not its own work
        phase = "other"
        for frame in stack.split(";"):
            for name, label in PHASES:
                if name in frame:
                    phase = label
        for name, label in WITHIN:  # samples taken for these are theirs, not the timed phase's
            if name in stack:
                phase = label
        if phase == "other" and "_find_and_load" in stack:
            phase = "imports"
        seconds[(worker, phase)] += int(count) / rate
    return seconds


if __name__ == "__main__":
    got = phases(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 50.0)
    for (worker, phase), s in sorted(got.items(), key=lambda kv: (kv[0][0], -kv[1])):
        if worker != "parent":  # the parent waits on its workers: idle, not work
            print(f"{worker:10s} {phase:30s} {s:7.1f} s")
