"""Number formatting shared by the page, the figures and the terminal tables.

Every function takes anything (None, NaN, inf, numbers) and returns a short string; "–" means
"no value".
"""

from __future__ import annotations

import math

DASH = "–"


def _missing(v) -> bool:
    if v is None:
        return True
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def secs(v) -> str:
    """Seconds with a unit that keeps 3 significant digits: 3.36 ms, 45 µs."""
    if _missing(v):
        return DASH
    v = float(v)
    if math.isinf(v):
        return "∞"
    sign = "-" if v < 0 else ""
    a = abs(v)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if a >= scale:
            return f"{sign}{a / scale:.3g} {unit}"
    return f"{sign}{a * 1e9:.3g} ns"


def num(v, spec: str = ".3g") -> str:
    if _missing(v):
        return DASH
    return format(float(v), spec)


def _ratio(v: float) -> str:
    """Two decimals between 0.1 and 10 (1.00, 1.26, 0.15), so ratios near 1 keep theirs."""
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}" if 0.1 <= v < 10 else f"{v:.3g}" if v >= 10 else f"{v:.2g}"


def times(v) -> str:
    """A ratio: 1.00×, 1.26×, 0.046×, 115×."""
    if _missing(v):
        return DASH
    return f"{_ratio(float(v))}×"


def interval(lo, hi) -> str:
    """An interval of ratios: [0.99–1.02]."""
    if _missing(lo) or _missing(hi):
        return ""
    return f"[{_ratio(float(lo))}–{_ratio(float(hi))}]"


def calls(v) -> str:
    """Break-even calls: 'never' (inf), '–' (unknown), else an integer count."""
    if v is None:
        return DASH
    try:
        v = float(v)
    except (TypeError, ValueError):
        return DASH
    if math.isnan(v):
        return DASH
    if math.isinf(v):
        return "never"
    n = round(v)
    return f"{n:,} call" + ("" if n == 1 else "s")


def pct(v, digits: int = 0) -> str:
    """A fraction as a percentage: 0.431 -> 43%."""
    if _missing(v):
        return DASH
    return f"{100 * float(v):.{digits}f}%"


def signed_pct(v) -> str:
    """A change already in percent: +12.3%, -4.0%."""
    if _missing(v):
        return DASH
    return f"{float(v):+.1f}%"


def flop(v) -> str:
    if _missing(v):
        return DASH
    v = float(v)
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.3g} FLOP"
