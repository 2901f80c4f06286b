"""The Keras step's xla-over-graph speedup as the protocol measures it (interleaved samples,
sequential stopping) against plain loops of the same two ``tf.function``s alternating (graph,
xla, xla, graph: each loop ``LOOP_S`` s after 20 warm calls), the functions built once at the
start. The speedup is a ratio of two modes measured side by side, so the host's drift cancels
in it: a difference of a few percent shows in a few rounds where each mode's time over its
loop does not. Variants: the protocol's own settings (3-s budget, as ``jitbench.measure``'s
examples) twice (an A/A control), settings that change what happens around a switch of mode,
and ``jitbench.measure`` itself (builds its own functions), with its own settings and with 20
untimed calls after a switch. ``ONLY`` picks variants by words of their names. Order rotated
every round.

    [ONLY=word,word] [RATIOS_JSON=out.json] \
        python docs/lab/keras-graph-step/keras_speedup_protocol_vs_loop.py [ROUNDS]

Prints per variant the median over the rounds of its speedup / the loops' speedup in the same
round, and of each mode's time / its loops' time.
"""
import json
import os
import statistics
import sys
from pathlib import Path

import jitbench  # noqa: E402
from jitbench.protocol.settings import Protocol  # noqa: E402
from jitbench.protocol.timing import Timed, measure as protocol_measure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage, userloop, steps  # noqa: E402

usage(__doc__)
ARGV = sys.argv[1:]

ROUNDS = int(ARGV[0]) if ARGV else 10
model, (xn, yn), (x, y), fns, sync = steps.keras_functions()
calls = {m: (lambda f=fns[m]: f(x, y)) for m in ("graph", "xla")}


def protocol(**settings):
    def run() -> dict[str, float]:
        r = protocol_measure([Timed(m, calls[m], sync) for m in calls],
                             Protocol(budget=3, **settings), pairs=[("xla", "graph")])
        return {m: statistics.median(r[m].samples) for m in calls}
    return run


def through_measure(**settings):
    def run() -> dict[str, float]:
        out = jitbench.measure(model, xn, yn, modes=["graph", "xla"],
                               protocol=Protocol(budget=3, **settings))
        return {row["mode"]: row["median_s"] for row in out.rows}
    return run


VARIANTS = userloop.only({"protocol's own": protocol(),
                   "protocol's own, again (A/A)": protocol(),
                   "protocol, 1-s blocks": protocol(block_time=1.0),
                   "protocol, 100-ms samples": protocol(sample_min_time=0.1),
                   "protocol, 20 calls a switch": protocol(switch_calls=20),
                   "jitbench.measure": through_measure(),
                   "jitbench.measure, 20 calls a switch": through_measure(switch_calls=20)})


def loops() -> dict[str, float]:
    g1, x1, x2, g2 = (userloop.loop_time(calls[m], sync) for m in ("graph", "xla", "xla", "graph"))
    return {"graph": (g1 + g2) / 2, "xla": (x1 + x2) / 2}


res: dict[str, list[float]] = {}
names = list(VARIANTS)
for r in range(ROUNDS):
    for name in names[r % len(names):] + names[:r % len(names)]:
        before = loops()
        got = VARIANTS[name]()
        after = loops()
        loop = {m: (before[m] + after[m]) / 2 for m in calls}
        res.setdefault(f"{name}: speedup", []).append(
            (got["graph"] / got["xla"]) / (loop["graph"] / loop["xla"]))
        for m in calls:
            res.setdefault(f"{name}: {m}", []).append(got[m] / loop[m])
print(f"{ROUNDS} rounds; each / the loops' in the same round, median [range]")
for k, v in res.items():
    print(f"  {k:45s} {statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]", flush=True)
if os.environ.get("RATIOS_JSON"):
    Path(os.environ["RATIOS_JSON"]).write_text(json.dumps(res))
