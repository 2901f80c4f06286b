"""A night measured in several fresh processes: the process is the unit of the night's point.

A fresh process of the same program lands in a state of its own (thread placement, address
layout, allocator), and on a shared host that state moves a series' ratio by more than the
interval one process can give: the samples of one process share its state, so their interval
says nothing about it. Where a series' scatter between nights is wider than a step the nightly
must see, the night measures it in ``k`` fresh processes (Kalibera and Jones: repeat at the
level where the variance lives) and its point is their combination (:func:`combine`):

- value: the geometric mean of the ``k`` processes' values;
- sigma of the night (log units): the larger of the spread between the processes (their
  standard deviation) and the processes' own sigma (from their intervals, root mean square),
  over sqrt(k): two processes that happen to agree do not make a night more precise than its
  samples, and samples that agree do not hide processes that disagree;
- interval: value x exp(+-1.96 sigma).

:func:`processes_needed` chooses ``k`` for a series from its own history: the scatter of its
nights with one process each (a night of k processes scatters less, but not below what the
nights share: ``jitbench.analysis.detectors.processes_noise``) and tonight's interval, so
that a step of the threshold stands ``z_min + 1.645`` noises clear
(``jitbench.analysis.detectors.paired_night``: what a series can see).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from jitbench.analysis.detectors import POWER_Z, processes_noise
from jitbench.protocol.timing import robust_sigma

Z95 = 1.959964


def interval_sigma(low: float | None, high: float | None) -> float | None:
    """The log sigma of a 95% interval (None without one)."""
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float))
            and 0 < low <= high):
        return None
    return (math.log(high) - math.log(low)) / (2 * Z95)


def combine(values: Sequence[float], lows: Sequence[float | None] | None = None,
            highs: Sequence[float | None] | None = None) -> dict[str, float | int | None]:
    """One night's point from its processes' values (positive) and their intervals:
    ``value``, ``low``, ``high`` (None where no process had an interval and only one process
    ran), ``processes`` and ``spread`` (the standard deviation of the log values between the
    processes; None for one)."""
    logs = [math.log(v) for v in values]
    if not logs:
        raise ValueError("no process to combine")
    k = len(logs)
    lows = list(lows) if lows is not None else [None] * k
    highs = list(highs) if highs is not None else [None] * k
    if k == 1:
        return {"value": values[0], "low": lows[0], "high": highs[0], "processes": 1,
                "spread": None}
    mean = sum(logs) / k
    spread = math.sqrt(sum((x - mean) ** 2 for x in logs) / (k - 1))
    own = [s for s in (interval_sigma(lo, hi) for lo, hi in zip(lows, highs)) if s is not None]
    within = math.sqrt(sum(s * s for s in own) / len(own)) if own else 0.0
    sigma = max(spread, within) / math.sqrt(k)
    return {"value": math.exp(mean), "low": math.exp(mean - Z95 * sigma),
            "high": math.exp(mean + Z95 * sigma), "processes": k, "spread": spread}


def geometric_mean(values: Sequence[float | None]) -> float | None:
    """The geometric mean of the positive numbers among ``values`` (None without any): how
    a night's processes' medians combine."""
    logs = [math.log(v) for v in values if isinstance(v, (int, float)) and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def single_process_sigma(history_logs: Sequence[float], history_processes: Sequence[int],
                         floor: float) -> float:
    """The night-to-night sigma (log units) a series would have with one process a night:
    the robust sigma of its nights over what their median process count leaves of one
    process's (``detectors.processes_noise``), at least ``floor``."""
    if len(history_logs) < 2:
        return floor
    k = sorted(history_processes)[len(history_processes) // 2] if history_processes else 1
    return max(robust_sigma(list(history_logs)) / processes_noise(max(1, k)), floor)


def processes_needed(sigma_one: float, night_sigma: float, threshold: float, z_min: float,
                     max_processes: int) -> int:
    """How many fresh processes a night needs for a step of ``threshold`` to stand ``z_min +
    1.645`` noises clear, where ``k`` processes have noise sqrt((sigma_one x
    ``processes_noise(k)``)² + night_sigma² / k); between 1 and ``max_processes`` (the cap
    where no count reaches it)."""
    target = math.log1p(threshold) / (z_min + POWER_Z)
    for k in range(1, max(1, max_processes) + 1):
        if (sigma_one * processes_noise(k)) ** 2 + night_sigma ** 2 / k <= target ** 2 + 1e-15:
            return k
    return max(1, max_processes)
