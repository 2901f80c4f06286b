"""Where jitbench's jit time for the JAX MLP update exceeds the plain loop's: jitbench beside
eager, jitbench with jit alone, a loop synced every ``loops`` calls (as a sample is), and the
loop of 200 calls synced once (3 repetitions).

    python docs/lab/measure-vs-loop/sync_and_interleave_gap.py
"""
import sys, time, statistics
import jitbench
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
fn, args, loops, sync, modes = steps.jax_mlp()
for rep in range(3):
    r = jitbench.measure(fn, *args, modes=["eager", "jit"], budget=3)
    row = {x["mode"]: x for x in r.rows}
    L = row["jit"]["loops"]
    j = row["jit"]["median_s"]
    # loop syncing every L calls, like a sample
    call = loops["jit"]
    for _ in range(20): out = call()
    sync(out)
    per = []
    for s in range(40):
        t0 = time.perf_counter()
        for _ in range(L): out = call()
        sync(out)
        per.append((time.perf_counter() - t0) / L)
    only = jitbench.measure(fn, *args, modes=["jit"], budget=3)
    print(f"loops {L}  measure jit {j*1e3:.3f} ms  jit-alone measure {only.rows[0]['median_s']*1e3:.3f} ms  loop-by-samples {statistics.median(per)*1e3:.3f} ms  loop200 {userloop.loop_time(call, sync)*1e3:.3f} ms  eager {row['eager']['median_s']*1e3:.2f} ms")
