"""Check the harness against a plain, minimal timing loop on the same cases.

    python docs/lab/interleaving-and-the-harness/harness_vs_plain.py [--repeats 3] [--rounds 30] [--case SUBSTRING]

Two comparisons per case, each beside its own A/A control (the plain loop against itself,
measured the same way), so a reader sees how far apart two *identical* measurements land:

1. **processes**: `jitbench run` (one case, one mode: the whole harness, worker process and
   all) alternating with a plain loop in a fresh process, twice (plain A, plain B), per repeat.
   Two processes started seconds apart are not interleaved: their ratio carries the machine's
   drift between them, and the plain B / plain A control shows how much.
2. **interleaved**: in one process, the harness's own pieces (the worker's adapter builds the
   mode on placed inputs; ``jitbench.protocol.timing.measure`` runs the protocol: first call, warm-up,
   ``loops`` calibration, samples) alternating round by round with two plain loops over an
   independently built ``jax.jit`` / ``tf.function(jit_compile=True)``, the order rotated every
   round. Drift hits all three alike, so what is left of harness / plain is the harness's own
   bias, and plain B / plain A its noise floor.

The plain loop times single synced calls and reports their median, as the harness does
(``loops`` is 1 for calls of a millisecond or more).

Measured 2026-11-23 (2-core machine; README, "Does the harness itself bias what it
measures?"), two runs: interleaved, harness / plain 1.006 / 1.001 (jax matmul), 0.994 /
1.003 (tf matmul), 1.020 / 1.000 (jax mmd), 1.019 / 0.993 (tf mmd), controls 0.990-1.067;
across processes (one run, 5 repeats) the control alone spread 0.75-1.21. Until then this script compared way 1 only, one plain process per repeat and no
control; it read JAX mmd as a "harness 6-16% faster" lean, which lies inside that spread.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = [  # (suite, framework, mode, variant, dtype, size label)
    ("matmul_relu", "jax", "jit", "fused", "float32", "512x512x512"),
    ("matmul_relu", "tf", "xla", "fused", "float32", "512x512x512"),
    ("mmd", "jax", "jit", "default", "float32", "n512-d64"),
    ("mmd", "tf", "xla", "default", "float32", "n512-d64"),
]
MIN_TIME = 0.75  # seconds of samples per measurement across processes (jitbench --min-time)
# ...and per turn in one process: short turns, so drift (levels that hold for seconds on this
# machine) moves little between the three measurements of a round
TURN_TIME = 0.25

# argv: suite framework mode variant dtype size rounds seconds (of samples per measurement);
# rounds 0: the plain loop only, once
SESSION = r"""
import json, statistics, sys, time
import numpy as np
from jitbench.define.workload import discover, Filters, expand
suite, fw, mode, variant, dtype, size, rounds = sys.argv[1:8]
rounds, seconds = int(rounds), float(sys.argv[8])
case = next(c for c in expand(Filters(suite=(suite,), framework=(fw,), mode=(mode,),
            variant=(variant,), dtype=(dtype,), device=("cpu",))) if c.size == size)
wl = discover()[suite][1]
xs = wl.inputs(case.params, dtype, np.random.default_rng(case.seed))
if fw == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(wl.jax(case.params, dtype, variant)[0])
    args = [jax.device_put(a) for a in xs]
    sync = jax.block_until_ready
else:
    import tensorflow as tf
    f = tf.function(wl.tf(case.params, dtype, variant)[0], jit_compile=True)
    args = [tf.constant(a) for a in xs]
    sync = lambda out: tf.test.experimental.sync_devices()
clock = time.perf_counter
for _ in range(20):
    sync(f(*args))

def plain():
    times, start = [], clock()
    while clock() - start < seconds or len(times) < 7:
        t0 = clock()
        sync(f(*args))
        times.append(clock() - t0)
    return statistics.median(times)

if not rounds:
    print(json.dumps({"plain": plain()}))
    sys.exit()

from jitbench.protocol import case_setup as casework
from jitbench.frameworks import get_adapter
from jitbench.protocol.timing import Protocol, measure
adapter = get_adapter(fw)
work = casework.Casework(adapter, fw, "cpu", xs)
timed = work.timed(mode, work.build(wl.builder(fw)(case.params, dtype, variant), mode))
protocol = Protocol(min_time=seconds)

def harness():
    return statistics.median(measure([timed], protocol, counters=adapter.counters)[mode].samples)

ways = {"harness": harness, "plain A": plain, "plain B": plain}
names = list(ways)
for i in range(rounds):
    order = names[i % 3:] + names[:i % 3]
    got = {name: ways[name]() for name in order}
    print(json.dumps(got), flush=True)
"""


def session(case, rounds: int) -> list[dict[str, float]]:
    seconds = TURN_TIME if rounds else MIN_TIME
    out = subprocess.run([sys.executable, "-c", SESSION, *case, str(rounds), str(seconds)],
                         check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def harness_run(case, out: Path) -> float:
    suite, fw, mode, variant, dtype, size = case
    subprocess.run([sys.executable, "-m", "jitbench", "run", "--suite", suite, "--framework", fw,
                    "--mode", mode, "--variant", variant, "--dtype", dtype, "--device", "cpu",
                    "--out", str(out), "--no-report", "--no-calibrate", "--min-time",
                    str(MIN_TIME)], check=True, capture_output=True)
    run = max(out.iterdir())
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    return next(r for r in rows if r["size"] == size)["median_s"]


def summary(name: str, how: str, got: list[dict[str, float]]) -> str:
    """One line: harness / plain (the geometric mean of plain A and B, each round) and the
    control plain B / plain A: median of the rounds' ratios and their quartiles."""
    def ratios(r):
        q1, _, q3 = statistics.quantiles(r, n=4) if len(r) > 1 else (r[0],) * 3
        return f"{statistics.median(r):.3f} [quartiles {q1:.3f}-{q3:.3f}]"

    return (f"{name}, {how} ({len(got)}): harness / plain "
            + ratios([g["harness"] / math.sqrt(g["plain A"] * g["plain B"]) for g in got])
            + "; control plain B / plain A " + ratios([g["plain B"] / g["plain A"] for g in got]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="process triples per case")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds per case "
                    "(each: harness, plain A, plain B in a rotating order)")
    ap.add_argument("--case", default="", help="only the cases whose name contains this, "
                    "e.g. mmd/jax")
    args = ap.parse_args()
    cases = [c for c in CASES if args.case in "/".join(c)]
    if not cases:
        ap.error(f"no case contains {args.case!r}; cases: "
                 + ", ".join("/".join(c) for c in CASES))
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            name = "/".join(case)
            across = []
            for i in range(args.repeats):
                got = {"harness": harness_run(case, Path(tmp) / f"{name.replace('/', '-')}-{i}"),
                       "plain A": session(case, 0)[0]["plain"],
                       "plain B": session(case, 0)[0]["plain"]}
                across.append(got)
                print(f"{name} processes {i + 1}: " + ", ".join(
                    f"{k} {v * 1e3:.3f} ms" for k, v in got.items()), flush=True)
            within = session(case, args.rounds) if args.rounds else []
            for i, got in enumerate(within):
                print(f"{name} interleaved {i + 1}: " + ", ".join(
                    f"{k} {v * 1e3:.3f} ms" for k, v in got.items()), flush=True)
            lines += [summary(name, how, got) for how, got in
                      (("processes", across), ("interleaved", within)) if got]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
