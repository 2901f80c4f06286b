"""pytest-benchmark JSON (``--benchmark-json FILE`` or a file of the ``--benchmark-autosave``
folder) as jitbench result rows, so ``jitbench.load_results`` and ``jitbench report`` read it.

Only benchmarks written by ``suites/test_bench.py`` are rows: their ``extra_info`` carries the
case (see ``jitbench.pytest_plugin.plugin.run_case``). pytest-benchmark's statistics become the
timing
columns; a "sample" is one round, i.e. the mean of ``iterations`` synced calls.

Format history of that ``extra_info`` (its ``jitbench_schema`` key):
  1 — first format.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from jitbench.errors import UserError
from jitbench.results.row import SCHEMA_VERSION

EXTRA_INFO_SCHEMA = 1

# pytest-benchmark stats key -> jitbench column
_STATS = {"median": "median_s", "mean": "mean_s", "stddev": "stdev_s", "iqr": "iqr_s",
          "min": "min_s", "max": "max_s", "rounds": "n_samples", "iterations": "iterations"}


def _row(bench: dict[str, Any], run_id: str, where: str) -> dict[str, Any]:
    info = dict(bench["extra_info"])
    version = info.pop("jitbench_schema")
    if version != EXTRA_INFO_SCHEMA:
        newer = isinstance(version, int) and version > EXTRA_INFO_SCHEMA
        raise UserError(f"{where} has jitbench_schema {version!r}; this jitbench reads "
                        f"version {EXTRA_INFO_SCHEMA}: "
                        + ("upgrade jitbench to load it" if newer else
                           "load it with the jitbench version that wrote it, or re-run the "
                           "benchmark"))
    stats = bench.get("stats") or {}
    row: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "error": None,
                           "error_type": None}
    row.update(info)
    row.update({col: stats.get(key) for key, col in _STATS.items()})
    # per-round data is in --benchmark-json files, and in autosaved ones only with
    # --benchmark-save-data
    row["samples"] = stats.get("data")
    row["pytest_name"] = bench.get("fullname")
    row["pytest_group"] = bench.get("group")
    return row


def read_pytest_benchmark(path: str | Path) -> list[dict[str, Any]]:
    """One row per jitbench benchmark in a pytest-benchmark JSON file; ``run_id`` is the file's
    stem (autosaved names are unique: ``0001_<commit>_<date>_...``)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{str(path)!r} is not valid JSON ({exc.msg}, line {exc.lineno})")
    except OSError as exc:
        raise UserError(f"cannot read {str(path)!r}: {exc.strerror}") from exc
    benchmarks = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benchmarks, list):
        raise UserError(f"{str(path)!r} is not a pytest-benchmark JSON file (no 'benchmarks' "
                        f"list); jitbench reads run folders, results.jsonl files and the JSON "
                        f"of `pytest --benchmark-json` / `--benchmark-autosave`")
    rows, others = [], 0
    for number, bench in enumerate(benchmarks):
        if "jitbench_schema" not in (bench.get("extra_info") or {}):
            others += 1
            continue
        rows.append(_row(bench, path.stem, f"{path}: benchmarks[{number}]"))
    if others and rows:
        warnings.warn(f"{path}: {others} benchmarks not written by jitbench's "
                      f"suites/test_bench.py were left out", stacklevel=2)
    if benchmarks and not rows:
        raise UserError(f"{str(path)!r} holds no jitbench benchmarks ({others} others); "
                        f"write one with `pytest --benchmark-only --benchmark-json FILE`")
    return rows
