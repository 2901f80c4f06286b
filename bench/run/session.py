"""The session of a run: what every pass over a run's cases holds (its record, the options it
was asked for, the signal stopper, how many rows exist, progress), its one way to start and
end (:meth:`Session.running`: signals armed, the record finished whatever the end), and the
one place a loop of workers bound to a run's record is made (:func:`group_loop`). Every kind
of run holds one: ``jitbench run`` and its resume with the warm compile-cache pass inside
(``jitbench.run.runner``), an A/B's rounds (``jitbench.run.ab_arms``), a recompile sweep
(``jitbench.run.sweep``)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from jitbench.results.record import RunRecord
from jitbench.run import startup
from jitbench.run.groups import GroupLoop, Key, open_loop
from jitbench.run.options import RunOptions
from jitbench.run.progress import Progress
from jitbench.run.signals import Ending, StopOnSignals, stop_cleanly


@dataclasses.dataclass
class Session:
    """One pass over a run's pending cases: where rows go, and what is known so far."""

    record: RunRecord
    options: RunOptions
    total: int  # cases of the run
    done: int  # of them with a row
    on_progress: Callable[[Progress], None] | None
    started: float = dataclasses.field(default_factory=time.monotonic)
    stopper: StopOnSignals = dataclasses.field(default_factory=StopOnSignals)
    # rows may come from two threads at once (an A/B's duet, jitbench.run.ab_arms)
    _writing: Any = dataclasses.field(default_factory=threading.Lock, repr=False)

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
                resume: str | None = "jitbench run --resume") -> Iterator[Ending]:
        """The session from start to end: a signal ends it as ``interrupted`` (naming how to
        ``resume``, None: it cannot be); whatever the end, ``cleanup(status)`` runs, the
        record is finished with the status and the rows, and the progress says the status."""
        ending = None
        try:
            with stop_cleanly(self.record, self.stopper, lambda: self.done, self.total,
                              cleanup=cleanup, resume=resume) as ending:
                yield ending
        finally:
            self.progress(ending.status if ending else "failed")

    def progress(self, current: str) -> None:
        if self.on_progress:
            self.on_progress(Progress(self.done, self.total, current,
                                      time.monotonic() - self.started))

    def loop(self) -> GroupLoop:
        """The loop of workers of this session's run."""
        return group_loop(self.record, self.options, self.stopper.critical)


def log_path(run_dir: Path, key: Key, prefix: str = "") -> Path:
    framework, group_name, device = key
    return run_dir / "logs" / f"{prefix}{framework}-{group_name}-{device}.log"


def group_loop(record: RunRecord, options: RunOptions, critical, *,
               arm_env: dict[str, str] | None = None, python: str | None = None,
               log_prefix: str = "", env_group_prefix: str = "") -> GroupLoop:
    """A group loop writing to ``record``: its workers do start-up first and get the options'
    environment; meta.json records each worker and each failure. For an A/B arm
    (``jitbench.run.ab_arms``): ``arm_env`` on top of a mode's own variables (``*_FLAGS`` joined,
    not replaced, so an arm's XLA flag keeps auto-clustering's), ``python``: another
    interpreter than this one (it runs the jitbench installed in it, nothing of this one on its
    path; None: this one), and prefixes for its logs and its workers' record."""

    return open_loop(options.protocol, options.case_timeout,
                     log_for=lambda key: log_path(record.run_dir, key, log_prefix),
                     env=lambda key: (startup.worker_env(*key), options.worker_env(
                         record.run_dir), arm_env),
                     record=record, env_group_prefix=env_group_prefix,
                     capture=options.capture(record.run_dir), critical=critical,
                     worker_options={"python": python, "import_paths": ()} if python else {})
