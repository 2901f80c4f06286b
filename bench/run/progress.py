"""What a run tells its caller as it goes (the CLI renders it): how far it is, and each group's
verdicts as soon as the group ends."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jitbench.analysis.costs import break_even_calls
from jitbench.report import fmt


@dataclasses.dataclass
class Progress:
    """``done`` of ``total`` cases have a row; ``current``: what is being measured now, or
    what a group that just ended found."""

    done: int
    total: int
    current: str
    elapsed_s: float


def group_line(case: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The line ``jitbench run`` prints when a group ends: what was measured (workload/variant,
    framework, device, dtype, size), then :func:`verdicts`, e.g.
    ``mmd/outer jax cpu float32 n512-d64: jit 11.7x faster than eager [10.9-13.2], compile
    121 ms, pays off after 1 call, max rel err 0.028 vs float64``. ``case``: any mapping (a
    row, a Case's fields) with those five keys."""
    head = (f"{case.get('workload')}/{case.get('variant')} {case.get('framework')} "
            f"{case.get('device')} {case.get('dtype')} {case.get('size')}")
    return f"{head}: {verdicts(rows) or 'no verdict'}"


def verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    """A group's verdicts in a word and a number each, e.g. ``jit 11.7x faster than eager
    [10.9-13.2]; aot failed (compile_error)``; empty when the group has no JIT-on row. Where the
    rows have them, each verdict is followed by the JIT mode's compile cost (first call − median),
    the call from which it pays off against its baseline's row, and its largest relative error
    against the float64 reference.

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
        base = next((b for b in rows if b.get("mode") == r.get("verdict_baseline")
                     and b.get("status") in ("ok", None)), None)
        parts[-1] += "".join(f", {e}" for e in _costs(r, base, r["verdict"]))
    return "; ".join(parts)


def _costs(on: Mapping[str, Any], off: Mapping[str, Any] | None, verdict: str) -> list[str]:
    """What a JIT mode costs and how right it is, from its row (and its baseline's): compile
    cost, break-even (as the report gives it: where the verdict is faster; "never" where it is
    slower; none where it is not known), max relative error vs the float64 reference; the ones
    it has."""
    out = []
    first, med = on.get("first_call_s"), on.get("median_s")
    if _number(first) and _number(med):
        out.append(f"compile {fmt.secs(max(first - med, 0.0))}")
        be = break_even_calls(on, off) if off is not None and verdict == "faster" else math.nan
        if verdict == "slower":
            out.append("never pays off")
        elif not math.isnan(be):
            out.append("never pays off" if math.isinf(be) else
                       "pays off from the first call" if be <= 1 else
                       f"pays off after {fmt.calls(be)}")
    err = on.get("max_rel_err")
    if _number(err):
        out.append(f"max rel err {err:.2g} vs float64")
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _inverse(v: Any) -> Any:
    return 1 / v if _number(v) and v > 0 else None


def _x(v: float) -> str:
    return f"{v:.3g}"
