"""Ctrl-C, SIGTERM and SIGHUP as one clean stop of a run, between two rows, and the end every
kind of run shares (:func:`stop_cleanly`, which a run's session enters in
``jitbench.run.session.Session.running``: ``jitbench run`` and its resume, ``jitbench ab``, a
sweep)."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from typing import Any, Callable, Iterator

from jitbench.errors import Interrupted

STOP_SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None),
                                 getattr(signal, "SIGHUP", None)) if s is not None)


class StopOnSignals:
    """Turn Ctrl-C, SIGTERM and SIGHUP into one :class:`Interrupted`, raised outside critical
    sections (a row being appended, a worker being started), once; later signals are ignored
    while the run cleans up. Only in the main thread (elsewhere Python allows no handlers)."""

    def __init__(self):
        self.signum: int | None = None
        self._raised = False
        self._disarmed = False
        self._depth = 0
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "StopOnSignals":
        if threading.current_thread() is threading.main_thread():
            for s in STOP_SIGNALS:
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)

    def _handle(self, signum, frame) -> None:
        if self.signum is not None or self._disarmed:
            return  # already stopping, or cleaning up: finish that first
        self.signum = signum
        if self._depth == 0:
            self._raised = True
            raise Interrupted(signum)

    def disarm(self) -> None:
        """From now on signals are ignored (until ``__exit__``): the cleanup must finish."""
        self._disarmed = True

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        """A section a signal must not cut: the stop is raised at its end instead. Counted
        in the main thread only (where the handler runs); another thread's section (an A/B's
        second arm in a duet, ``jitbench.run.ab_arms``) is finished by the main thread joining
        that thread before it cleans up."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        self.check()

    def check(self) -> None:
        """Raise the stop a signal asked for while a critical section ran, once, now that
        none does."""
        if self._depth == 0 and self.signum is not None and not self._raised \
                and threading.current_thread() is threading.main_thread():
            self._raised = True
            raise Interrupted(self.signum)


@dataclasses.dataclass
class Ending:
    """How a run session ended: ``failed`` until it completes or is interrupted."""

    status: str = "failed"
    signal_name: str | None = None


@contextlib.contextmanager
def stop_cleanly(record, stopper: StopOnSignals, done: Callable[[], int], total: int,
                 cleanup: Callable[[str], None] | None = None,
                 resume: str | None = "jitbench run --resume") -> Iterator[Ending]:
    """A session of a run that writes rows into ``record`` (``jitbench.results.record``),
    with ``stopper`` armed: a signal ends it as :class:`Interrupted` naming the folder to
    resume (``resume``; None: a run that cannot be resumed, a sweep) and how many of ``total``
    rows it has (``done()``); whatever the end,
    signals are then ignored, ``cleanup(status)`` runs (the workers closed, killed unless it
    completed) and the record is finished with the status, the time and the rows."""
    ending, started = Ending(), time.monotonic()
    with stopper:
        try:
            yield ending
            ending.status = "complete"
        except KeyboardInterrupt as exc:
            ending.status = "interrupted"
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            ending.signal_name = signal.Signals(signum).name
            raise Interrupted(signum, record.run_dir, done(), total, resume=resume) from None
        finally:
            stopper.disarm()
            try:
                if cleanup is not None:
                    cleanup(ending.status)
            finally:
                record.finish(ending.status, time.monotonic() - started,
                              interrupted_by=ending.signal_name, n_recorded=done())
