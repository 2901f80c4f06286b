"""How noisy the machine was while a case ran: CPU steal and load, from /proc where it exists.

On shared VMs the same case has moved 0.5-3x between runs minutes apart; these numbers let the
report say when a measurement was taken under contention.
"""

from __future__ import annotations

import os


def _cpu_times() -> list[int] | None:
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    return [int(x) for x in fields[1:]]


def snapshot() -> dict:
    return {"cpu": _cpu_times(), "load": os.getloadavg() if hasattr(os, "getloadavg") else None}


def between(before: dict, after: dict) -> dict[str, float | None]:
    """steal_pct and busy_pct of all CPUs between two snapshots, and the 1-minute load."""
    out: dict[str, float | None] = {"cpu_steal_pct": None, "cpu_busy_pct": None,
                                    "loadavg_1m": after["load"][0] if after["load"] else None}
    a, b = before["cpu"], after["cpu"]
    if a and b:
        d = [y - x for x, y in zip(a, b)]
        total = sum(d[:8])  # user nice system idle iowait irq softirq steal
        if total > 0:
            steal = d[7] if len(d) > 7 else 0
            idle = d[3] + (d[4] if len(d) > 4 else 0)
            out["cpu_steal_pct"] = 100.0 * steal / total
            out["cpu_busy_pct"] = 100.0 * (total - idle) / total
    return out
