"""Python's garbage collections during jitbench.measure of the JAX MLP update, and the jit time
against a plain loop with the collector on and off (3 rounds each).

    python docs/lab/measure-vs-loop/gc_during_measure.py
"""
import gc, sys, time
import jitbench
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
fn, args, loops, sync, modes = steps.jax_mlp()
stats = {}
t0 = [0.0]
def cb(phase, info):
    if phase == "start": t0[0] = time.perf_counter()
    else:
        g = info["generation"]; n, s = stats.get(g, (0, 0.0)); stats[g] = (n + 1, s + time.perf_counter() - t0[0])
gc.callbacks.append(cb)
jitbench.measure(fn, *args, modes=modes, budget=3)
for variant in ("normal", "gc off", "normal", "gc off", "normal", "gc off"):
    stats.clear()
    if variant == "gc off": gc.disable()
    T = time.perf_counter()
    out = jitbench.measure(fn, *args, modes=modes, budget=3)
    T = time.perf_counter() - T
    gc.enable()
    row = {r["mode"]: r for r in out.rows}
    l = userloop.loop_time(loops["jit"], sync)
    print(variant, f"wall {T:.1f}s", {g: (n, round(s*1e3,1)) for g, (n, s) in sorted(stats.items())},
          f"jit/loop {row['jit']['median_s']/l:.3f} loops {row['jit']['loops']} eager {row['eager']['median_s']*1e3:.2f}ms jit {row['jit']['median_s']*1e3:.3f} loop {l*1e3:.3f}")
stats.clear(); T=time.perf_counter(); userloop.loop_time(loops["jit"], sync, calls=3000); print("loop 3000 jit calls", {g: (n, round(s*1e3,1)) for g, (n, s) in sorted(stats.items())}, f"{time.perf_counter()-T:.2f}s")
stats.clear(); T=time.perf_counter(); userloop.loop_time(loops["eager"], sync, calls=200); print("loop 200 eager calls", {g: (n, round(s*1e3,1)) for g, (n, s) in sorted(stats.items())}, f"{time.perf_counter()-T:.2f}s")
