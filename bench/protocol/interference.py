"""The interference check: did interleaving a group's modes move one of them against the others?

``jitbench.protocol.timing`` measures each mode alone twice after the interleaved phase (two rounds
over
the modes, ``alone_samples`` and ``alone_again_samples``); this module judges those blocks
against the interleaved samples. Pure arithmetic on :class:`~jitbench.protocol.timing.ModeResult`,
tested
with made-up numbers (tests/test_timing.py).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Mapping, Sequence

from jitbench.protocol.samples import ModeResult
from jitbench.protocol.timing import robust_sigma


def _block_logs(samples: Sequence[float], k: int) -> list[float]:
    n = len(samples) // k
    return [math.log(statistics.median(samples[i * k:(i + 1) * k])) for i in range(n)]


def interference(results: Mapping[str, ModeResult], tolerance: float = 0.03,
                 z: float = 3.0) -> dict[str, dict[str, Any]]:
    """Did interleaving move a mode against the others? Per mode with samples and blocks
    alone (``alone_samples``, ``alone_again_samples``: two rounds over the modes after the
    interleaved phase), how far each block's median lies from the interleaved samples, in
    log. What all modes of a round share (the median over the modes) is the machine's drift
    between the phases: this machine moves between levels 1.6x apart for seconds at a time,
    both A/A twins alike. It is ``interference_shared``; the rest is this mode's own
    ``interference`` (interleaved / alone, drift taken out: what interleaving does to its
    speedups). ``interference_flag`` only when the rest of *both* blocks lies on the same side,
    each farther than ``interference_noise``: ``z`` robust sigmas (1.4826 MAD) of the medians
    of the interleaved samples cut into blocks of the alone blocks' length, never less than
    ``tolerance``. Nothing is flagged with fewer than 4 such blocks; no check (``{}``) for a
    mode without samples or blocks alone, or in a group with one such mode."""
    live = {m: r for m, r in results.items()
            if r.samples and r.alone_samples and r.alone_again_samples
            and min(r.samples) > 0 and min(r.alone_samples + r.alone_again_samples) > 0}
    if len(live) < 2:
        return {}
    out, off, bars = {}, {}, {}
    for m, r in live.items():
        k = min(len(r.alone_samples), len(r.alone_again_samples))
        logs = _block_logs(r.samples, k)
        center = statistics.median(logs) if logs else math.log(statistics.median(r.samples))
        sigma = robust_sigma(logs, center) if logs else 0.0
        bars[m] = max(z * sigma, math.log1p(tolerance)) if len(logs) >= 4 else None
        off[m] = [math.log(statistics.median(b)) - center
                  for b in (r.alone_samples, r.alone_again_samples)]
    drift = [statistics.median(d[j] for d in off.values()) for j in (0, 1)]
    shared = math.exp(-statistics.fmean(drift))
    for m, r in live.items():
        own = [off[m][j] - drift[j] for j in (0, 1)]
        alone = statistics.median(r.alone_samples + r.alone_again_samples)
        out[m] = {"alone_median_s": alone, "alone_samples": list(r.alone_samples),
                  "alone_again_samples": list(r.alone_again_samples),
                  "interference": statistics.median(r.samples) / alone / shared,
                  "interference_shared": shared, "interference_flag": False}
        if bars[m] is not None:
            out[m]["interference_noise"] = math.expm1(bars[m])
            out[m]["interference_flag"] = bool(min(own) > bars[m] or max(own) < -bars[m])
    return out
