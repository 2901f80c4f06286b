"""Result files: writing rows as they come, loading runs into one tidy DataFrame.

The row and its format history (``schema_version``) belong to ``jitbench.results.row``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence, TypedDict

from jitbench.errors import DataWarning, UserError
from jitbench.results.fields import check
from jitbench.results.row import SCHEMA_VERSION  # re-exported: readers import it from here

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


def encode(row: dict[str, Any]) -> str:
    """One row as its line of results.jsonl (every writer's encoding: NaN/inf as JSON can
    hold them, anything else JSON cannot hold as its text)."""
    return json.dumps(_clean(row), default=str) + "\n"


def rewrite(path: Path | str, rows: Iterable[dict[str, Any]]) -> None:
    """Replace a results file with ``rows`` at once (a temporary file, then a rename: a kill
    leaves the old file or the new one, never half of one). For a whole new set of rows: a
    merge of shards, a run's rows with fields added after it; a run appends with
    :class:`ResultWriter`."""
    path = Path(path)
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(encode(r) for r in rows), encoding="utf-8")
    os.replace(tmp, path)


class ResultWriter:
    """Appends one JSON line per row; each row is one ``write`` of a whole line, flushed and
    fsynced before ``write`` returns, so a killed run loses at most the row being written.

    Opening an existing file first drops a truncated last line (a run killed mid-write), so
    rows appended by a resumed run never glue onto half a line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fh = None

    def __enter__(self) -> "ResultWriter":
        repair_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")
        return self

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(encode(row))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def __exit__(self, *exc) -> None:
        self._fh.close()


def repair_tail(path: Path) -> bool:
    """Cut a results file after its last complete line; True when something was cut. A last
    line that is a whole JSON object, only missing its newline, gets the newline instead."""
    path = Path(path)
    if not path.is_file():
        return False
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return False
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return False
        block, end = 1 << 16, size
        keep = 0
        while end > 0:  # find the last newline, reading backwards
            start = max(0, end - block)
            fh.seek(start)
            chunk = fh.read(end - start)
            i = chunk.rfind(b"\n")
            if i >= 0:
                keep = start + i + 1
                break
            end = start
        fh.seek(keep)
        try:
            whole = isinstance(json.loads(fh.read(size - keep)), dict)
        except ValueError:  # includes a UnicodeDecodeError of a line cut mid-character
            whole = False
        if whole:
            fh.seek(size)
            fh.write(b"\n")
            return False
        fh.truncate(keep)
    warnings.warn(f"{path}: dropped a truncated last line (a row cut off when a run was "
                  f"killed); its case will be measured again", DataWarning, stacklevel=3)
    return True


def _version_problem(path, number: int, version: Any) -> str:
    where = f"{path}:{number}"
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        return (f"{where} has schema_version {version}, newer than the {SCHEMA_VERSION} this "
                f"jitbench reads: upgrade jitbench (pip install -U jitbench) to load it")
    if isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        return (f"{where} has schema_version {version}, older than the {SCHEMA_VERSION} this "
                f"jitbench reads: load it with the jitbench version that wrote it, or re-run "
                f"the benchmark")
    return (f"{where} has schema_version {version!r}; this jitbench reads version "
            f"{SCHEMA_VERSION} only: is it a jitbench results file? Re-run the benchmark to "
            f"get one")


def read_rows(path: Path, *, as_written: bool = False) -> list[dict[str, Any]]:
    """Rows of one results.jsonl. A truncated last line (a run killed mid-write) is skipped
    with a warning naming file and line; a damaged line elsewhere, or a row of an unknown
    schema version, is refused with a UserError saying what to do. A row whose fields a hand
    edit broke is kept, the broken fields read as missing (``jitbench.results.fields.check``),
    with a warning naming file and line. ``as_written``: the rows exactly as on disk,
    unchecked, for a writer that copies them (``merge``, the compile-cache warm pass).
    """
    rows = []
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from exc
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) and not text.endswith("\n"):
                warnings.warn(f"{path}:{number}: truncated last line skipped (the run was "
                              f"killed while writing it)", DataWarning, stacklevel=2)
                continue
            raise UserError(f"{path}:{number} is not a JSON row: the file is damaged or is "
                            f"not a jitbench results file")
        if not isinstance(row, dict):
            raise UserError(f"{path}:{number} is not a JSON object: not a jitbench results "
                            f"file")
        version = row.get("schema_version")
        if version != SCHEMA_VERSION:
            raise UserError(_version_problem(path, number, version))
        if as_written:  # for a writer that copies rows: never rewrite what a user edited
            rows.append(row)
            continue
        row, problems = check(row)
        if problems:
            warnings.warn(f"{path}:{number}: {'; '.join(problems)} (read as missing; the file "
                          f"is left as it is)", DataWarning, stacklevel=2)
        rows.append(row)
    return rows


def _result_files(path: Path) -> list[Path]:
    if path.is_dir():
        f = path / "results.jsonl"
        if f.is_file():
            return [f]
        raise UserError(f"{str(path)!r} is not a run folder (no results.jsonl in it)")
    if path.is_file():
        if path.suffix != ".jsonl":
            raise UserError(f"{str(path)!r} is neither a run folder nor a results .jsonl file")
        return [path]
    raise UserError(f"{str(path)!r} does not exist")


def load_meta(run_dir: Path | str) -> dict[str, Any]:
    """meta.json of a run folder; {} where there is none, UserError where it is damaged."""
    f = Path(run_dir) / "meta.json"
    if not f.is_file():
        return {}
    try:
        meta = json.loads(f.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{str(f)!r} is damaged ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(meta, dict):
        raise UserError(f"{str(f)!r} is not a jitbench meta.json (not a JSON object)")
    return meta


SUMMARY_NAME = "nightly-summary.json"  # what a night said (jitbench.nightly.night)


class NightSummary(TypedDict, total=False):
    """A night's summary (``nightly-summary.json``), as :func:`write_summary` writes it and
    :func:`load_summary` reads it back: the record of what a night decided. A night still being
    judged has ``pending`` (:data:`PENDING`) and only its first keys."""

    latest_run: str  # the night judged
    runs: list[str]  # every night of the history, oldest first
    pending: bool  # judging had not finished (a crash leaves it)
    regression: bool  # a confirmed step: the night fails (exit 1)
    confirmed: list[dict[str, Any]]  # the steps that fail it, each with its ``text``
    suspected: list[dict[str, Any]]  # what the history flagged before any recheck
    smaller_steps: list[dict[str, Any]]  # slower by less than the threshold, named (exit 0)
    undecided: list[str]  # touched cases a change night could not decide (exit 3)
    undecided_note: str | None
    change: dict[str, Any] | None  # what changed and its A/B (jitbench.nightly.change_ab)
    change_note: str | None
    accepted: dict[str, Any] | None  # the night a team accepted as the reference
    accepted_note: str | None
    last_good: str | None  # the night tonight was measured against
    advisory: list[dict[str, Any]]
    near: list[dict[str, Any]]  # re-measured as suspects: z between 2 and 3
    recheck: dict[str, Any] | None  # the suspects measured again, round by round
    rechecked: bool
    repeats: dict[str, Any] | None  # more fresh processes the same night
    thresholds: dict[str, Any]
    metrics: dict[str, str]
    n_tested: int
    n_short_history: int
    n_other_protocol: int
    note: str | None
    protocol_note: str | None
    machine: dict[str, Any] | None  # the machine's own move tonight (not judged when large)
    machine_note: str | None
    waiting: list[str]
    waiting_note: str | None
    process_profile: str
    profile_note: str | None
    visible: dict[str, Any]  # the smallest step each series can show
    evaluation: dict[str, Any] | None  # each detector replayed on this history
    seen: list[dict[str, Any]]  # per case, the smallest step tonight could see (``up_to``)
    seen_note: str | None
    unusable: list[dict[str, Any]]  # the nights after the reference that could not be it
    unusable_note: str | None
    not_measurable: list[dict[str, Any]]  # touched cases this machine cannot run, with why
    missing_shards: list[str]  # K/N of each shard that never reached the merge (undecided)
    creep: list[dict[str, Any]]  # smaller steps chained since the last accepted night
    machine_steps: list[dict[str, Any]]  # what the history saw on a night nothing changed
    history_steps: list[str]  # a change night: what the history flagged beside the A/B


SUMMARY_MD_NAME = "nightly-summary.md"  # the same, as Markdown for a CI's page


def write_summary_markdown(path: Path | str, text: str) -> Path:
    """Write a night's Markdown summary into the folder ``path`` (atomically)."""
    tmp = Path(path) / (SUMMARY_MD_NAME + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, Path(path) / SUMMARY_MD_NAME)
    return Path(path) / SUMMARY_MD_NAME


def load_summary(run_dir: Path | str) -> NightSummary:
    """A night's ``nightly-summary.json`` as data; {} where it has none or it cannot be
    read."""
    try:
        said = json.loads((Path(run_dir) / SUMMARY_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return said if isinstance(said, dict) else {}


def write_summary(path: Path | str, said: NightSummary | dict[str, Any]) -> None:
    """Write a night's summary (``nightly-summary.json`` in its run folder, or the reports
    root's copy: ``path`` is the folder) atomically; NaN/inf as :func:`encode` writes them."""
    tmp = Path(path) / (SUMMARY_NAME + ".tmp")
    tmp.write_text(json.dumps(_clean(said), indent=2, default=str))
    os.replace(tmp, Path(path) / SUMMARY_NAME)


def write_json(path: Path | str, data: Any) -> Path:
    """Write ``data`` as compact JSON, sorted keys, gzip-compressed where ``path`` ends in
    ``.gz`` (reproducibly: no timestamp in the gzip header); NaN/inf as
    :func:`encode` writes them. Returns the path."""
    import gzip

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_clean(data), separators=(",", ":"), sort_keys=True, default=str)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path


PENDING = "pending"  # a summary's key while the night is being judged (a crash leaves it)

NIGHT_NAME = "night.json"  # a night's phases, each with when it finished (jitbench.nightly.state)


def load_night(run_dir: Path | str) -> dict[str, Any]:
    """A night's record of its phases (``{"run_id", "created_at", "phases": {name: when}}``);
    {} where the folder was never made a night (a ``jitbench run``, or a night of a jitbench
    older than this record)."""
    try:
        said = json.loads((Path(run_dir) / NIGHT_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return said if isinstance(said, dict) else {}


def write_night(run_dir: Path | str, said: dict[str, Any]) -> None:
    """Write a night's record of its phases (atomically: a kill leaves the old one or the
    new one, never half of either)."""
    tmp = Path(run_dir) / (NIGHT_NAME + ".tmp")
    tmp.write_text(json.dumps(_clean(said), indent=2, default=str))
    os.replace(tmp, Path(run_dir) / NIGHT_NAME)


ACCEPTED_NAME = "accepted.json"  # a night a team made the reference (jitbench nightly --accept)


def load_acceptance(run_dir: Path | str) -> dict[str, Any]:
    """A night's acceptance (``reason``, ``accepted_at``); {} where it was not accepted."""
    try:
        said = json.loads((Path(run_dir) / ACCEPTED_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return said if isinstance(said, dict) and said.get("reason") else {}


def write_acceptance(run_dir: Path | str, reason: str, accepted_at: str) -> dict[str, Any]:
    """Record that a night is accepted as the reference, with its reason (atomically)."""
    said = {"run_id": Path(run_dir).name, "reason": reason, "accepted_at": accepted_at}
    tmp = Path(run_dir) / (ACCEPTED_NAME + ".tmp")
    tmp.write_text(json.dumps(said, indent=2))
    os.replace(tmp, Path(run_dir) / ACCEPTED_NAME)
    return said


def load_rows(paths: str | Path | Sequence[str | Path]) -> list[dict[str, Any]]:
    if isinstance(paths, (str, Path)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for p in paths:
        p = Path(p)
        if p.suffix == ".json" and p.is_file():
            from jitbench.results.pytest_import import read_pytest_benchmark  # only when asked for

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
