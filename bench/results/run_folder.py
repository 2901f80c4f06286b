"""A run folder on disk: its name (the run id) and the names of its sub-folders, its lock,
``cases.json`` (the cases it was asked to measure), and reading it back to resume it.

A run folder holds ``meta.json`` (``jitbench.results.meta``), ``results.jsonl``
(``jitbench.results.files``), ``cases.json``, ``logs/`` (one log per worker, :func:`log_path`)
and ``.lock`` while a jitbench process writes it; a night's folder holds the runs it measured
besides its own, each in a sub-folder named here (:data:`RECHECKS`, :data:`REPEATS`,
:data:`CHANGE`, :data:`AB`). Run ids and sub-folders are named in this module alone: whoever
writes or reads them takes the names from here.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

from jitbench.define.workload import Case, source_file
from jitbench.errors import DataWarning, UserError
from jitbench.results.files import load_meta, read_rows
from jitbench.results.row import SCHEMA_VERSION

CASES_FILE = "cases.json"
LOCK_FILE = ".lock"
# a run folder's sub-folders
LOGS = "logs"  # one log per worker (log_path)
RECHECKS = "rechecks"  # a night's re-measurements of its suspects (jitbench.nightly.recheck)
REPEATS = "repeats"  # a night's further processes (jitbench.nightly.repeats)
CHANGE = "change"  # a change night's A/B against the last good night (jitbench.nightly.change_ab)
AB = "ab"  # a confirmed step measured side by side (jitbench.nightly.change.side_by_side)


def new_run_id() -> str:
    """A new run's id: when it started, and this process (two runs started in one second by
    two processes get two ids)."""
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid() % 10000:04d}"


def recheck_run_id(round_index: int) -> str:
    """The id of a night's re-measurement in round ``round_index`` (counting from 0): a new
    id each time, so judging a night twice re-measures afresh."""
    return f"{new_run_id()}-r{round_index + 1}"


def repeat_run_id(night_id: str, process: int) -> str:
    """The id of a night's further process number ``process`` (the night's own is 1)."""
    return f"{night_id}-p{process}"


def sweep_run_id() -> str:
    """A recompile sweep's own id (``jitbench sweep`` without ``--run-id``)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-sweep"


def log_path(run_dir: Path | str, key: tuple[str, str, str], prefix: str = "") -> Path:
    """The log of the worker of ``key`` (framework, worker group, device) under ``run_dir``'s
    ``logs/``; ``prefix`` tells apart the workers of one run's passes (an A/B arm's round:
    ``a1-``, the compile cache's warm pass: ``warm-``, a sweep: ``sweep-``)."""
    framework, group_name, device = key
    return Path(run_dir) / LOGS / f"{prefix}{framework}-{group_name}-{device}.log"


@contextlib.contextmanager
def lock(run_dir: Path) -> Iterator[None]:
    """One jitbench process writes a run folder at a time."""
    import fcntl

    path = run_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise UserError(f"{str(run_dir)!r} is being written by another jitbench process "
                            f"(pid {other}); wait for it to finish or stop it first") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def check_writable(folder: Path | str, what: str) -> Path:
    """Create ``folder`` if needed and prove a file can be written in it, before measuring
    anything; UserError naming ``what`` (e.g. "--out") otherwise."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{what} {str(folder)!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # one probe per thread: two runs started into one folder at once (threads of one
        # caller) must not remove each other's probe
        probe = folder / f".jitbench-write-test-{os.getpid()}-{threading.get_ident()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"{what} {str(folder)!r} cannot be written: "
                        f"{exc.strerror or exc}") from exc
    return folder


def write_cases(run_dir: Path, cases: Sequence[Case]) -> None:
    tmp = run_dir / (CASES_FILE + ".tmp")
    tmp.write_text(json.dumps({"schema_version": SCHEMA_VERSION,
                               "cases": [c.to_dict() for c in cases]}, indent=1))
    os.replace(tmp, run_dir / CASES_FILE)


SOURCES = "sources"  # a copy of each workload's file as the run measured it


def keep_sources(run_dir: Path, cases: Sequence[Case]) -> dict[str, str]:
    """Copy the file each of the cases' workloads is defined in to ``run_dir/sources/``, so the
    run's workloads can be measured again as they were after their files changed (a night's
    A/B against the last good night, ``jitbench.nightly.change``); {source: the copy's path
    relative to ``run_dir``}, leaving out a source whose file cannot be read."""
    out: dict[str, str] = {}
    for name, source in sorted({(c.workload, c.source) for c in cases if c.source}):
        path = source_file(source)
        try:
            text = path.read_bytes() if path else None
        except OSError:
            text = None
        if text is None:
            continue
        rel = f"{SOURCES}/{name}.py"
        (run_dir / SOURCES).mkdir(exist_ok=True)
        (run_dir / rel).write_bytes(text)
        out[source] = rel
    return out


def load_run(run_dir: Path | str, quiet: bool = False
             ) -> tuple[dict[str, Any], list[Case], list[dict[str, Any]]]:
    """(meta, cases asked for, rows recorded) of a run folder; UserError if it is not one.
    ``quiet``: no DataWarning about a damaged results file (when only checking)."""
    if quiet:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            return load_run(run_dir)
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise UserError(f"RUN_DIR {str(run_dir)!r} does not exist")
    if not run_dir.is_dir():
        raise UserError(f"RUN_DIR {str(run_dir)!r} is not a folder; give a run folder "
                        f"such as results/<run_id>")
    meta = load_meta(run_dir)
    if not meta or "run_id" not in meta:
        raise UserError(f"RUN_DIR {str(run_dir)!r} is not a jitbench run (no meta.json with "
                        f"a run_id in it)")
    f = run_dir / CASES_FILE
    if not f.is_file():
        raise UserError(f"RUN_DIR {str(run_dir)!r} has no {CASES_FILE}, so the cases it "
                        f"should hold are unknown (a merged run, or one written before "
                        f"--resume existed); it cannot be resumed")
    try:
        data = json.loads(f.read_text())
        cases = [Case.from_dict(c) for c in data["cases"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{str(f)!r} is damaged ({type(exc).__name__}: {exc})") from exc
    if data.get("schema_version") != SCHEMA_VERSION:
        raise UserError(f"{str(f)!r} has schema_version {data.get('schema_version')!r}; "
                        f"this jitbench resumes version {SCHEMA_VERSION} only")
    results = run_dir / "results.jsonl"
    rows = read_rows(results) if results.is_file() else []
    return meta, cases, rows


def pending_cases(run_dir: Path | str) -> tuple[list[Case], list[Case]]:
    """(all cases of the run, those without a row yet)."""
    _, cases, rows = load_run(run_dir)
    done = {r.get("case_id") for r in rows}
    return cases, [c for c in cases if c.case_id not in done]
