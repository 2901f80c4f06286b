"""A run's record, with one owner: :class:`RunRecord` holds a run folder's ``meta.json`` and
``cases.json`` and is the only thing that changes them. The runner, the resume, the
calibration hook, the group loop's worker callbacks and a shard merge talk to it; everything
else reads ``meta.json`` (``jitbench.results.files.load_meta``) as data it does not change.

    record = RunRecord.create(run_dir, run_id, command, protocol, cases, options)
    record.add_worker(hello, env_group)      # as workers say hello
    record.set_calibration(summary)          # once, before the cases
    record.finish("complete", elapsed_s, n_recorded=n)
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from jitbench.define.workload import Case
from jitbench.results import meta as meta_mod
from jitbench.results import run_folder


class RunRecord:
    """The record of one run folder (see the module docstring). :attr:`meta` is a read-only
    view; every change goes through a method, which writes ``meta.json`` at once."""

    def __init__(self, run_dir: Path | str, meta: dict[str, Any]):
        self.run_dir = Path(run_dir)
        self._meta = meta

    # ------------------------------------------------------------------ making and opening
    @classmethod
    def create(cls, run_dir: Path | str, run_id: str, command: Sequence[str], protocol,
               cases: Sequence[Case], options: Mapping[str, Any]) -> "RunRecord":
        """A new run's record: what it runs on (``jitbench.results.meta.collect``), its
        options (what ``--resume`` reads back) and its cases."""
        record = cls(run_dir, meta_mod.collect(run_id, command, protocol, len(cases)))
        record._meta.update(options)
        run_folder.write_cases(record.run_dir, cases)
        record._write()
        return record

    @classmethod
    def open(cls, run_dir: Path | str, quiet: bool = False
             ) -> tuple["RunRecord", list[Case], list[dict[str, Any]]]:
        """An existing run's record, the cases it was asked for and the rows it has
        (``jitbench.results.run_folder.load_run``)."""
        meta, cases, rows = run_folder.load_run(run_dir, quiet=quiet)
        return cls(run_dir, meta), cases, rows

    @property
    def meta(self) -> Mapping[str, Any]:
        return types.MappingProxyType(self._meta)

    @property
    def run_id(self) -> str:
        return str(self._meta.get("run_id") or self.run_dir.name)

    def _write(self) -> None:
        meta_mod.write(self.run_dir, self._meta)

    # ------------------------------------------------------------------ what a run adds
    def set_calibration(self, summary: Mapping[str, Any]) -> None:
        """The machine's calibration (``jitbench.run.calibration.measure``)."""
        self._meta["calibration"] = dict(summary)
        self._write()

    def add_worker(self, hello: Mapping[str, Any], env_group: str) -> None:
        """What a worker reported when it started (versions, devices, start-up cost)."""
        meta_mod.add_worker(self._meta, dict(hello, env_group=env_group))

    def worker_failed(self, pid: int | None, status: str, how: str, during: str) -> None:
        meta_mod.worker_failed(self._meta, pid, status, how, during)

    def start_resume(self, command: Sequence[str], n_pending: int) -> None:
        meta_mod.start_resume(self.run_dir, self._meta, command, n_pending)

    def finish(self, status: str, elapsed_s: float, interrupted_by: str | None = None,
               n_recorded: int | None = None) -> None:
        meta_mod.finish(self.run_dir, self._meta, status, elapsed_s,
                        interrupted_by=interrupted_by, n_recorded=n_recorded)


def write_merged(out_dir: Path | str, metas: Iterable[Mapping[str, Any]], n_cases: int
                 ) -> dict[str, Any]:
    """The record of a run merged from shards (``jitbench merge``), written to ``out_dir``
    (``jitbench.results.meta.merged``)."""
    merged = meta_mod.merged(list(metas), Path(out_dir).name, n_cases)
    meta_mod.write(Path(out_dir), merged)
    return merged
