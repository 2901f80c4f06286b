"""A run's record, with one owner: :class:`RunRecord` holds a run folder (its lock,
``meta.json``, ``cases.json`` and ``results.jsonl``'s writer) and is the only thing that changes
them. A run's session (``jitbench.run.session.Session``: the one place a run is created
and resumed), the calibration hook, the group loop's worker callbacks and a shard merge talk
to it; everything else reads a run (``jitbench.results.files``) as data it does not change.

    run_dir = RunRecord.folder(out_root, run_id)          # checked, made, writable
    with RunRecord.create(run_dir, run_id, command, protocol, cases, options) as record:
        record.add_worker(hello, env_group)               # as workers say hello
        record.set_calibration(summary)                   # once, before the cases
        with record.writing():
            record.write_row(row, retried)                # each row as it comes
        record.finish("complete", elapsed_s, n_recorded=n)
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from jitbench.define.workload import Case, source_fingerprints
from jitbench.errors import UserError
from jitbench.results import meta as meta_mod
from jitbench.results import row as rows
from jitbench.results import run_folder
from jitbench.results.files import ResultWriter, read_rows, repair_tail, rewrite


def _one_at_a_time(method):
    """A change of the record made under its lock (two threads may change it at once)."""
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._mutex:
            return method(self, *args, **kwargs)
    return locked


class RunRecord:
    """The record of one run folder (see the module docstring). :attr:`meta` is a read-only
    view; every change goes through a method, which writes ``meta.json`` at once."""

    META, ROWS = "meta.json", "results.jsonl"  # a sweep's record: sweep_meta.json, sweep.jsonl

    def __init__(self, run_dir: Path | str, meta: dict[str, Any]):
        self.run_dir = Path(run_dir)
        self._meta = meta
        self._writer: ResultWriter | None = None
        self._locks = contextlib.ExitStack()
        # the group loops of two arms may write at once (an A/B's duet): one change at a time
        self._mutex = threading.RLock()

    # ------------------------------------------------------------------ making and opening
    @staticmethod
    def folder(out_root: Path | str, run_id: str | None = None, extra: Sequence[str] = ()
               ) -> Path:
        """``out_root/run_id`` (a new id when None), made with its ``logs/`` (and ``extra``
        subfolders), once the id names a folder and ``out_root`` can be written; UserError
        otherwise."""
        run_id = run_folder.new_run_id() if run_id is None else run_id
        if not run_id or "/" in run_id or run_id in (".", ".."):
            raise UserError(f"run id {run_id!r} cannot name a folder")
        run_folder.check_writable(out_root, "results folder")
        run_dir = Path(out_root) / run_id
        try:
            for sub in (run_folder.LOGS, *extra):
                (run_dir / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot write results to {str(out_root)!r}: "
                            f"{exc.strerror or exc}") from exc
        return run_dir

    @classmethod
    def create(cls, run_dir: Path | str, run_id: str, command: Sequence[str], protocol,
               cases: Sequence[Case], options: Mapping[str, Any]) -> "RunRecord":
        """A new run's record, its folder locked until the record is closed (``with``): what
        it runs on (``jitbench.results.meta.collect``), its options (what ``--resume`` reads
        back) and its cases. UserError when the folder already holds results."""
        record = cls(run_dir, meta_mod.collect(run_id, command, protocol, len(cases)))
        record._lock()
        results = record.run_dir / "results.jsonl"
        if results.is_file() and results.stat().st_size > 0:
            record.close()
            raise UserError(f"{str(record.run_dir)!r} already holds results; continue it with "
                            f"`jitbench run --resume {record.run_dir}` or choose another run id")
        record._meta.update(options)
        # the devices its cases measure on (the nightly compares GPU runs' sample length)
        record._meta["devices_measured"] = sorted({c.device for c in cases})
        # what each workload's file was (the nightly names one that changed beside a step)
        record._meta["workload_sources"] = source_fingerprints(cases)
        # and a copy of each file, so it can be run as it was once it has changed
        record._meta["workload_files"] = run_folder.keep_sources(record.run_dir, cases)
        run_folder.write_cases(record.run_dir, cases)
        record._write()
        return record

    @classmethod
    def create_sweep(cls, run_dir: Path | str, run_id: str, command: Sequence[str],
                     n_jobs: int) -> "SweepRecord":
        """A recompile sweep's record (``jitbench sweep``): ``sweep_meta.json`` and
        ``sweep.jsonl``, beside a run's own files when the sweep joins a run's folder (its
        report then shows the sweep). What it runs on is recorded as a run's is."""
        from jitbench.protocol.settings import Protocol

        record = SweepRecord(run_dir, dict(meta_mod.collect(run_id, command, Protocol(),
                                                            n_jobs), kind="sweep"))
        record._lock()
        record._write()
        return record

    @classmethod
    def open(cls, run_dir: Path | str, quiet: bool = False
             ) -> tuple["RunRecord", list[Case], list[dict[str, Any]]]:
        """An existing run's record, its folder locked until the record is closed, a row cut
        in half by a kill dropped, the cases it was asked for and the rows it has
        (``jitbench.results.run_folder.load_run``). The run is checked before the lock is
        taken, so a folder that is no run says so at once."""
        run_folder.load_run(run_dir, quiet=True)
        record = cls(run_dir, {})
        record._lock()
        try:
            repair_tail(record.run_dir / "results.jsonl")
            meta, cases, recorded = run_folder.load_run(run_dir, quiet=quiet)
        except BaseException:
            record.close()
            raise
        record._meta = meta
        return record, cases, recorded

    def _lock(self) -> None:
        self._locks.enter_context(run_folder.lock(self.run_dir))

    def close(self) -> None:
        """Release the folder's lock."""
        self._locks.close()

    def __enter__(self) -> "RunRecord":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ the rows
    @contextlib.contextmanager
    def writing(self) -> Iterator["RunRecord"]:
        """``results.jsonl`` open for :meth:`write_row` (``jitbench.results.files``)."""
        with ResultWriter(self.run_dir / self.ROWS) as self._writer:
            yield self
        self._writer = None

    @_one_at_a_time
    def write_row(self, row: dict[str, Any], retried: str | None = None,
                  ab: tuple[str, int] | None = None) -> dict[str, Any]:
        """A row as a worker built it, stamped with this run's id (and why it was measured
        again, where it was; an A/B's arm and round); returns the row as written."""
        stamped = rows.stamp(row, self.run_id, retried, ab)
        self._writer.write(stamped)
        return stamped

    def write_failure(self, case: Case, status: str, message: str, retried: str | None = None,
                      ab: tuple[str, int] | None = None, **fields: Any) -> dict[str, Any]:
        """The row of a case whose worker failed (``jitbench.results.row.failure``), as
        written."""
        return self.write_row(rows.failure(case, status, message, **fields), retried, ab)

    def rows_as_written(self) -> list[dict[str, Any]]:
        """The run's rows as they are on disk (to be given back to :meth:`rewrite_rows`)."""
        return read_rows(self.run_dir / self.ROWS, as_written=True)

    def rewrite_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        """The run's rows replaced at once by ``rows`` (the same rows with fields a later pass
        added: the compile cache's warm first calls), atomically."""
        rewrite(self.run_dir / self.ROWS, rows)

    @property
    def meta(self) -> Mapping[str, Any]:
        return types.MappingProxyType(self._meta)

    @property
    def run_id(self) -> str:
        return str(self._meta.get("run_id") or self.run_dir.name)

    def _write(self) -> None:
        meta_mod.write(self.run_dir, self._meta, self.META)

    # ------------------------------------------------------------------ what a run adds
    @_one_at_a_time
    def set_calibration(self, summary: Mapping[str, Any]) -> None:
        """The machine's calibration (``jitbench.run.calibration.measure``)."""
        self._meta["calibration"] = dict(summary)
        self._write()

    @_one_at_a_time
    def set_ab(self, **fields: Any) -> None:
        """An A/B's progress (``jitbench.run.ab_arms``): rounds done, cases per verdict."""
        self._meta.setdefault("ab", {}).update(fields)
        self._write()

    @_one_at_a_time
    def add_worker(self, hello: Mapping[str, Any], env_group: str) -> None:
        """What a worker reported when it started (versions, devices, start-up cost)."""
        meta_mod.add_worker(self._meta, dict(hello, env_group=env_group))
        self._write()

    @_one_at_a_time
    def worker_failed(self, pid: int | None, status: str, how: str, during: str) -> None:
        """How a worker ended, when it did not end normally."""
        meta_mod.worker_failed(self._meta, pid, status, how, during)
        self._write()

    def start_resume(self, command: Sequence[str], n_pending: int) -> None:
        meta_mod.start_resume(self.run_dir, self._meta, command, n_pending)

    def finish(self, status: str, elapsed_s: float, interrupted_by: str | None = None,
               n_recorded: int | None = None) -> None:
        meta_mod.finish(self.run_dir, self._meta, status, elapsed_s,
                        interrupted_by=interrupted_by, n_recorded=n_recorded, name=self.META)


class SweepRecord(RunRecord):
    """A sweep's record (:meth:`RunRecord.create_sweep`): its rows are written as the sweep
    made them (one per call, ``jitbench.run.sweep``), through the same writer (one JSON line
    each, NaN and infinities as null)."""

    META, ROWS = "sweep_meta.json", "sweep.jsonl"

    @_one_at_a_time
    def write_row(self, row: dict[str, Any], retried: str | None = None,
                  ab: tuple[str, int] | None = None) -> dict[str, Any]:
        self._writer.write(row)
        return row


def write_merged(out_dir: Path | str, metas: Iterable[Mapping[str, Any]],
                 rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The record of a run merged from shards (``jitbench merge``), written to ``out_dir``:
    its rows (each case once) and its meta (``jitbench.results.meta.merged``)."""
    rewrite(Path(out_dir) / RunRecord.ROWS, rows)
    merged = meta_mod.merged(list(metas), Path(out_dir).name, len(rows))
    meta_mod.write(Path(out_dir), merged)
    return merged
