"""What a run tells its caller as it goes (the CLI renders it): how far it is, and each group's
verdicts as soon as the group ends."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any


@dataclasses.dataclass
class Progress:
    """``done`` of ``total`` cases have a row; ``current``: what is being measured now, or
    what a group that just ended found."""

    done: int
    total: int
    current: str
    elapsed_s: float


def verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    """A group's verdicts in a word and a number each, e.g. ``jit 11.7x faster than eager
    [10.9-13.2]; aot failed (compile_error)``; empty when the group has no JIT-on row.

    >>> verdicts([{"mode": "jit", "status": "ok", "verdict": "faster", "verdict_baseline":
    ...            "eager", "verdict_speedup": 11.7, "verdict_ci_low": 10.9,
    ...            "verdict_ci_high": 13.2}])
    'jit 11.7x faster than eager [10.9-13.2]'
    """
    parts = []
    for r in rows:
        mode, status = r.get("mode"), r.get("status")
        if status not in ("ok", None):
            parts.append(f"{mode} {status}")
            continue
        speedup = r.get("verdict_speedup")
        if not r.get("verdict") or not _number(speedup):
            continue
        lo, hi = r.get("verdict_ci_low"), r.get("verdict_ci_high")
        if r["verdict"] == "slower":  # "2x slower", not "0.5x slower"
            speedup, lo, hi = 1 / speedup, _inverse(hi), _inverse(lo)
        ci = f" [{_x(lo)}-{_x(hi)}]" if _number(lo) and _number(hi) else ""
        parts.append(f"{mode} {_x(speedup)}x {r['verdict']} than {r.get('verdict_baseline')}"
                     f"{ci}" if r["verdict"] in ("faster", "slower") else
                     f"{mode} {r['verdict']} against {r.get('verdict_baseline')} "
                     f"({_x(speedup)}x{ci})")
    return "; ".join(parts)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _inverse(v: Any) -> Any:
    return 1 / v if _number(v) and v > 0 else None


def _x(v: float) -> str:
    return f"{v:.3g}"
