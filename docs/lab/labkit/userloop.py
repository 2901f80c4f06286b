"""A user's plain loop timed beside what jitbench measures, in one process.

``LOOP_S`` (environment, seconds, default 0.3): a loop lasts this long at least; ``ONLY``: the
comma-separated words that pick ways by name (:func:`only`); ``RATIOS_JSON``: a file
:func:`between_loops` also writes its ratios to.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

CALLS, WARM = 200, 20
LOOP_S = float(os.environ.get("LOOP_S", "0.3"))  # a loop lasts this long at least


def loop_time(call, sync, calls=CALLS) -> float:
    """Seconds per call of a plain loop: ``calls`` calls, or more to last ``LOOP_S``."""
    for _ in range(WARM):
        out = call()
    sync(out)
    start = time.perf_counter()
    for _ in range(calls):
        out = call()
    sync(out)
    per = (time.perf_counter() - start) / calls
    more = int(LOOP_S / per) - calls
    if more <= 0:
        return per
    start = time.perf_counter()
    for _ in range(more):
        out = call()
    sync(out)
    return (per * calls + time.perf_counter() - start) / (calls + more)


def between_mode_loops(loops: dict, sync, measure):
    """``(measure(), {mode: the loop's seconds per call})``: a plain loop of each mode before
    the measurement and again after it in reverse order, each mode's loop time the mean of its
    two, so the host's drift over the measurement cancels to first order."""
    before = {m: loop_time(loops[m], sync) for m in loops}
    got = measure()
    after = {m: loop_time(loops[m], sync) for m in list(loops)[::-1]}
    return got, {m: (before[m] + after[m]) / 2 for m in loops}


def call_for(call, seconds: float) -> None:
    """``call()`` back to back for ``seconds`` (no sync at the end)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        call()


def only(ways: dict) -> dict:
    """The ways whose name holds one of the comma-separated words of ``ONLY`` (all if unset)."""
    words = os.environ.get("ONLY", "")
    return {k: v for k, v in ways.items() if not words or any(w in k for w in words.split(","))}


def calls_per_sample(call, sync, sample_s: float = 0.01) -> int:
    """Whole calls of ``call`` that last ``sample_s`` (from 50 calls back to back)."""
    start = time.perf_counter()
    for _ in range(50):
        call()
    sync(None)
    return max(1, round(sample_s / ((time.perf_counter() - start) / 50)))


def between_loops(variants: dict, rounds: int, call, sync) -> dict[str, list[float]]:
    """{name: [its time / the loop's, per round]}: each variant (a function returning seconds
    per call) between two plain loops of ``call`` (the loop's time: their mean), the variants
    in turn, the order reversed every round."""
    res: dict[str, list[float]] = {}
    for r in range(rounds):
        for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
            before = loop_time(call, sync)
            got = variants[name]()
            after = loop_time(call, sync)
            res.setdefault(name, []).append(got / ((before + after) / 2))
    if os.environ.get("RATIOS_JSON"):
        Path(os.environ["RATIOS_JSON"]).write_text(json.dumps(res))
    return res


def print_ratios(res: dict[str, list[float]], width: int = 24) -> None:
    for name, v in res.items():
        q = statistics.quantiles(v, n=4)
        print(f"  {name:{width}s} median {statistics.median(v):.3f} IQR [{q[0]:.3f}, "
              f"{q[2]:.3f}] range [{min(v):.3f}, {max(v):.3f}]", flush=True)
