"""The session of a run, from its birth to its end: the one place a run is created
(:meth:`Session.create`: its folder, its record) and resumed (:meth:`Session.resume`), what
every pass over a run's cases holds (its record, the options it was asked for, the signal
stopper, how many rows exist, progress), its one way to start and end
(:meth:`Session.running`: signals armed, the rows' writer open, the record finished whatever
the end), and the one place a loop of workers is made (:meth:`Session.loop`; outside any run:
:func:`loop_outside_a_run`). Every kind of run (:data:`KINDS`) holds one: ``jitbench run`` and
its resume with the warm compile-cache pass inside (``jitbench.run.runner``,
``jitbench.run.compile_cache``), an A/B's rounds (``jitbench.run.ab_arms``), a recompile sweep
(``jitbench.run.sweep``). The folder's name and its sub-folders' are
``jitbench.results.run_folder``'s."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol
from jitbench.results import run_folder
from jitbench.results.record import RunRecord
from jitbench.run import worker_warmup
from jitbench.run.groups import GroupLoop, Key, open_loop
from jitbench.run.options import RunOptions
from jitbench.run.progress import Progress
from jitbench.run.signals import Ending, StopOnSignals, stop_cleanly

# every kind of run: what it is called, and the command that resumes one (None: it cannot be)
KINDS = {"run": ("run", "jitbench run --resume"), "ab": ("A/B run", "jitbench ab --resume"),
         "sweep": ("sweep", None)}


@dataclasses.dataclass
class Session:
    """A run from its birth (:meth:`create`) or its resume (:meth:`resume`) to its end: where
    rows go, and what is known so far."""

    record: RunRecord
    options: RunOptions
    total: int  # rows the run may write (a run: one per case; an A/B: per case, arm and round)
    done: int  # of them written
    on_progress: Callable[[Progress], None] | None
    kind: str = "run"  # a key of KINDS
    started: float = dataclasses.field(default_factory=time.monotonic)
    stopper: StopOnSignals = dataclasses.field(default_factory=StopOnSignals)
    # rows may come from two threads at once (an A/B's duet, jitbench.run.ab_arms)
    _writing: Any = dataclasses.field(default_factory=threading.Lock, repr=False)

    # ------------------------------------------------------------------ birth and resume
    @classmethod
    @contextlib.contextmanager
    def create(cls, kind: str, out_root: Path | str, run_id: str | None,
               cases: Sequence[Any], options: RunOptions,
               meta: Mapping[str, Any] | None = None, *,
               command: Sequence[str] | None = None,
               on_progress: Callable[[Progress], None] | None = None,
               total: int | None = None, extra: Sequence[str] = ()) -> Iterator["Session"]:
        """A new run of ``kind`` (:data:`KINDS`) in ``out_root/run_id`` (a new id when None,
        ``jitbench.results.run_folder``), its folder made with ``extra`` sub-folders beside
        its logs and locked until the session ends: its record holds what it runs on, its
        ``command`` (default: this process's), the ``options`` (what a resume reads back),
        ``meta`` on top of them (an A/B's arms and settings) and its ``cases`` (a sweep: its
        jobs, only counted). ``total``: the rows it may write (default: one per case).
        UserError when the folder already holds a run's results."""
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: not one of {', '.join(KINDS)}")
        run_dir = RunRecord.folder(out_root, run_id, extra)
        command = list(command or sys.argv)
        if kind == "sweep":
            record = RunRecord.create_sweep(run_dir, run_dir.name, command, len(cases))
        else:
            record = RunRecord.create(run_dir, run_dir.name, command, options.protocol, cases,
                                      {**options.as_meta(run_dir),
                                       **({} if kind == "run" else {"kind": kind}),
                                       **(meta or {})})
        with record:
            yield cls(record, options, len(cases) if total is None else total, 0,
                      on_progress, kind)

    @classmethod
    @contextlib.contextmanager
    def resume(cls, run_dir: Path | str, kind: str = "run", *,
               case_timeout: float | None = None,
               on_progress: Callable[[Progress], None] | None = None
               ) -> Iterator[tuple["Session", list[Case], list[dict[str, Any]]]]:
        """An existing run of ``kind`` again, locked until the session ends, with its own
        options (``RunOptions.from_meta``; ``case_timeout``: another one), the cases it was
        asked for and the rows it has (a row cut in half by a kill dropped). UserError when
        the folder is no run, or a run of another kind (naming the command that resumes it).
        The session counts one row per case; nothing is marked running again until
        :meth:`restart`."""
        record, cases, recorded = RunRecord.open(run_dir)
        with record:
            found = record.meta.get("kind") or "run"
            if found != kind:
                word, how = KINDS.get(found, (found, None))
                raise UserError(f"{str(run_dir)!r} is not {_a(KINDS[kind][0])} but "
                                f"{_a(word)}" + (f"; resume it with `{how} {run_dir}`" if how
                                                 else ", which cannot be resumed"))
            RunRecord.folder(record.run_dir.parent, record.run_dir.name)  # its logs/ again
            options = RunOptions.from_meta(record.meta, case_timeout).check()
            done = len({r.get("case_id") for r in recorded} & {c.case_id for c in cases})
            yield cls(record, options, len(cases), done, on_progress, kind), cases, recorded

    def restart(self, n_pending: int, command: Sequence[str] | None = None) -> None:
        """Mark a resumed run as running again for ``n_pending`` cases, by ``command``
        (default: this process's)."""
        self.record.start_resume(list(command or sys.argv), n_pending)

    # ------------------------------------------------------------------ its middle and end
    @property
    def run_dir(self) -> Path:
        return self.record.run_dir

    def write(self, write_it: Callable[[], None], rows: int = 1) -> None:
        """Write ``rows`` rows (``write_it``) where no signal cuts them in half."""
        with self.stopper.critical(), self._writing:
            write_it()
            self.done += rows

    @contextlib.contextmanager
    def running(self, cleanup: Callable[[str], None] | None = None,
                then: Callable[[], None] | None = None) -> Iterator[Ending]:
        """The session from start to end, the record's rows open for writing inside: a signal
        ends it as ``interrupted`` (naming how to resume its kind); ``then``: a pass after the
        rows' writer is closed, still inside the session (the warm compile-cache pass, which
        rewrites the rows); whatever the end, ``cleanup(status)`` runs, the record is
        finished with the status and the rows, and the progress says the status."""
        ending = None
        try:
            with stop_cleanly(self.record, self.stopper, lambda: self.done, self.total,
                              cleanup=cleanup, resume=KINDS[self.kind][1]) as ending:
                with self.record.writing():
                    yield ending
                if then is not None:
                    then()
        finally:
            self.progress(ending.status if ending else "failed")

    def progress(self, current: str) -> None:
        if self.on_progress:
            self.on_progress(Progress(self.done, self.total, current,
                                      time.monotonic() - self.started))

    def loop(self, protocol: Protocol | None = None, *, options: RunOptions | None = None,
             log_prefix: str = "", env_group_prefix: str = "", warm_up: bool = True,
             capture: bool = True, fresh_worker_per_group: bool = False,
             arm_env: dict[str, str] | None = None, python: str | None = None) -> GroupLoop:
        """A loop of workers of this session's run, writing to its record (meta.json records
        each worker and each failure), a worker's start never cut by a signal: its workers
        get the ``options``' environment (default: the session's) and do their framework's
        warm-up first (``warm_up``; ``jitbench.run.worker_warmup``), measure with
        ``protocol`` (default: the options') and capture what the options ask
        (``capture``), their logs named with ``log_prefix`` (``jitbench.results.run_folder.
        log_path``) and their record with ``env_group_prefix``. For an A/B arm
        (``jitbench.run.ab_arms``): ``arm_env`` on top of a mode's own variables (``*_FLAGS``
        joined, not replaced, so an arm's XLA flag keeps auto-clustering's), ``python``:
        another interpreter than this one (it runs the jitbench installed in it, nothing of
        this one on its path; None: this one)."""
        options = options or self.options
        run_dir = self.record.run_dir
        return open_loop(protocol or options.protocol, options.case_timeout,
                         log_for=lambda key: run_folder.log_path(run_dir, key, log_prefix),
                         env=lambda key: (worker_warmup.worker_env(*key) if warm_up else None,
                                          options.worker_env(run_dir), arm_env),
                         record=self.record, env_group_prefix=env_group_prefix,
                         capture=options.capture(run_dir) if capture else None,
                         critical=self.stopper.critical,
                         fresh_worker_per_group=fresh_worker_per_group,
                         worker_options={"python": python, "import_paths": ()} if python
                         else {})


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "AEIOUaeiou" else f"a {word}"


def loop_outside_a_run(timeout: float, folder: Path, env: Mapping[str, str],
                       worker_options: Mapping[str, Any]) -> GroupLoop:
    """A loop of workers that belongs to no run (``jitbench.measure(..., isolate=True)``): no
    record, no signals of its own; its workers' logs under ``folder`` (named as a run's are),
    ``env`` on top of their mode's variables, ``worker_options`` the rest of each worker's
    keywords (``cwd``, ``import_paths``, ``startup_timeout``)."""
    def log_for(key: Key) -> Path:
        path = run_folder.log_path(folder, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    return open_loop(Protocol(), timeout, log_for=log_for, env=lambda key: (dict(env),),
                     worker_options=dict(worker_options))
