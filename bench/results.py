"""Result files: writing rows as they come, loading runs into one tidy DataFrame.

Format history of results.jsonl (``schema_version`` in every row):
  1 — first format: one JSON object per case × mode (see README, "Result rows").
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

from .errors import UserError

SCHEMA_VERSION = 1

# The columns every loaded DataFrame has, in this order (then any extra ones).
COLUMNS = [
    "run_id", "case_id", "workload", "variant", "size", "params", "dtype", "framework", "mode",
    "jit", "device", "status", "error_type", "error", "first_call_s", "median_s", "mean_s",
    "stdev_s", "iqr_s", "min_s", "n_samples", "samples", "gflops", "max_abs_err",
    "max_rel_err", "max_abs_err_vs_nojit", "max_rel_err_vs_nojit",
]


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf: write them as null/strings that load back to floats."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


class ResultWriter:
    """Appends one JSON line per row and flushes it to disk before returning."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fh = None

    def __enter__(self) -> "ResultWriter":
        self._fh = open(self.path, "a", encoding="utf-8")
        return self

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps(_clean(row), default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def __exit__(self, *exc) -> None:
        self._fh.close()


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of one results.jsonl. A truncated last line (a run killed mid-write) is skipped
    with a warning; a row of an unknown schema version is refused."""
    rows = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                warnings.warn(f"{path}:{number}: truncated last line skipped", stacklevel=2)
                continue
            raise UserError(f"{path}:{number} is not valid JSON; the file is damaged")
        version = row.get("schema_version")
        if version != SCHEMA_VERSION:
            raise UserError(f"{path}:{number} has schema_version {version!r}; this jitbench "
                            f"reads version {SCHEMA_VERSION}. Load it with the jitbench "
                            f"version that wrote it, or re-run the benchmark.")
        rows.append(row)
    return rows


def _result_files(path: Path) -> list[Path]:
    if path.is_dir():
        f = path / "results.jsonl"
        if f.is_file():
            return [f]
        raise UserError(f"{str(path)!r} is not a run folder (no results.jsonl in it)")
    if path.is_file():
        return [path]
    raise UserError(f"{str(path)!r} does not exist")


def load_meta(run_dir: Path | str) -> dict[str, Any]:
    f = Path(run_dir) / "meta.json"
    return json.loads(f.read_text()) if f.is_file() else {}


def load_rows(paths: str | Path | Sequence[str | Path]) -> list[dict[str, Any]]:
    if isinstance(paths, (str, Path)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for p in paths:
        p = Path(p)
        if p.suffix == ".json" and p.is_file():
            from .pytest_import import read_pytest_benchmark  # only when asked for

            rows.extend(read_pytest_benchmark(p))
            continue
        for f in _result_files(p):
            rows.extend(read_rows(f))
    return rows


def to_frame(rows: Iterable[dict[str, Any]]):
    import pandas as pd

    df = pd.DataFrame(list(rows))
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = None
    for col in ("first_call_s", "median_s", "mean_s", "stdev_s", "iqr_s", "min_s", "gflops",
                "max_abs_err", "max_rel_err", "max_abs_err_vs_nojit", "max_rel_err_vs_nojit"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    extra = [c for c in df.columns if c not in COLUMNS]
    return df[COLUMNS + extra]


def load_results(paths: str | Path | Sequence[str | Path]):
    """One tidy DataFrame, one row per case × mode, from run folders or results files."""
    return to_frame(load_rows(paths))
