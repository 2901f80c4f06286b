"""Whether any thread keeps working after the Keras step's xla or graph calls stop (CPU time per
thread from /proc/self/task over the 0.3 s after 0.5 s of calls), and which threads each mode
runs on (CPU seconds by thread name over 1 s of calls; * the caller).

    python docs/lab/keras-graph-step/keras_threads_after_xla.py
"""
import os, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, steps  # noqa: E402

usage(__doc__)
model, _, (x, y), fns, sync = steps.keras_functions()
g, xl = fns["graph"], fns["xla"]
tick = os.sysconf("SC_CLK_TCK")
def threads():
    out = {}
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/stat") as fh: s = fh.read()
            name = open(f"/proc/self/task/{t}/comm").read().strip()
        except OSError: continue
        f = s[s.rfind(")") + 2:].split()
        out[t] = (name, (int(f[11]) + int(f[12])) / tick)
    return out
me = str(__import__("threading").get_native_id())
for label, f in (("xla", xl), ("graph", g), ("xla", xl), ("graph", g)):
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end: f(x, y)
    sync(None)
    a = threads(); time.sleep(0.3); b = threads()
    busy = {t: b[t][1] - a[t][1] for t in b if t in a and t != me and b[t][1] - a[t][1] > 0}
    print(f"after {label}: {len(b)} threads; CPU s used by other threads in the 0.3 s idle after: {sum(busy.values()):.3f}", {a[t][0]: round(v, 3) for t, v in busy.items()})
# threads CPU during the block itself
for label, f in (("xla", xl), ("graph", g)):
    a = threads(); t0 = time.perf_counter()
    end = t0 + 1.0
    n = 0
    while time.perf_counter() < end: f(x, y); n += 1
    sync(None); b = threads(); wall = time.perf_counter() - t0
    per = {}
    for t in b:
        if t in a and b[t][1] - a[t][1] > 0:
            per[b[t][0] + ("*" if t == me else "")] = per.get(b[t][0] + ("*" if t == me else ""), 0) + b[t][1] - a[t][1]
    print(f"{label} for 1 s ({n} calls): CPU s by thread name", {k: round(v, 2) for k, v in per.items()}, f"total {sum(per.values()):.2f} / wall {wall:.2f}")
