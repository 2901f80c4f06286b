"""Reading one result row: numbers that may be missing, raw samples, the median; the keys
that identify a case and a row. Shared by every analysis module."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

CASE_KEYS = ["run_id", "workload", "variant", "size", "dtype", "framework", "device"]
# what identifies a row across runs (compare): the case without its run, plus the mode
ROW_KEYS = ["workload", "variant", "size", "dtype", "framework", "device", "mode"]


def pandas_module():
    import pandas as pd

    return pd


def as_number(v) -> float:
    """A float, NaN for missing values (None, NaN, strings that are not numbers)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def samples_array(v) -> np.ndarray:
    if isinstance(v, (list, tuple, np.ndarray)):
        a = np.asarray(v, dtype=float)
        return a[np.isfinite(a)]
    return np.zeros(0)


def call_times(v) -> list[float]:
    if isinstance(v, (list, tuple, np.ndarray)):
        return [float(x) for x in v if x is not None and math.isfinite(float(x))]
    return []


def row_median(row: Mapping[str, Any]) -> float:
    m = as_number(row.get("median_s"))
    if math.isnan(m):
        s = samples_array(row.get("samples"))
        m = float(np.median(s)) if s.size else math.nan
    return m


def group_records(records, keys) -> dict[tuple, list[dict[str, Any]]]:
    """Records (row dicts) by the tuple of their ``keys`` values, groups and their rows in
    order of first appearance; a missing value (None, NaN) is one key, None. The analyses and
    the report group rows this way: a pandas groupby turning each group into records took a
    third of a report's statistics time."""
    out: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        ident = tuple(None if v is None or (isinstance(v, float) and math.isnan(v)) else v
                      for v in (r[k] for k in keys))
        out.setdefault(ident, []).append(r)
    return out


def text_or(v, default=None):
    """``v`` when it is a string (a message, a note), else ``default``: pandas fills missing
    strings with NaN."""
    return v if isinstance(v, str) else default


def truthy(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return v != 0
    return False
