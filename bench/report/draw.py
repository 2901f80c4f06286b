"""Draw a page's figures side by side in worker processes.

matplotlib spends nearly all of a report's time laying out ticks and text, one figure after
another on one core. Each figure is a ``Job``: a module-level function and the plain data it
takes (DataFrames pickle), so any process can draw it; ``Drawing`` runs them on every usable
core, heaviest first, and hands each one's ``data:`` URI (or None) back by key. The page is the
same byte for byte as when drawn in this process.

A figure whose data is still to be computed (the speedups' bootstrap) is given as a
``Deferred``: a function returning its Job. The ready jobs start first; the deferred ones are
computed here meanwhile, and start when ready.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from jitbench.define.modes import FRAMEWORKS, SPECS


@dataclasses.dataclass(frozen=True)
class Job:
    """One figure: ``fn(*args)`` returns a data URI or None. ``weight`` orders the queue
    (heaviest first, so the longest figure does not start last); the number of panels or rows
    it draws is a fair guess."""

    fn: Callable[..., str | None]
    args: tuple = ()
    weight: float = 1.0


@dataclasses.dataclass(frozen=True)
class Deferred:
    """A figure whose Job needs data not computed yet: ``make()`` computes it."""

    make: Callable[[], Job]


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1




def _context():
    # fork: the workers start with matplotlib and pandas already imported (~1 s each saved);
    # where there is no fork (Windows, macOS by default) they import them afresh. Not in a
    # process running JAX or TensorFlow (a notebook, a test session): forking their threads
    # can deadlock the child, so the workers start afresh there too
    methods = multiprocessing.get_all_start_methods()
    threaded = any(SPECS[fw].module in sys.modules for fw in FRAMEWORKS)
    use_fork = "fork" in methods and not threaded
    return multiprocessing.get_context("fork" if use_fork else
                                       "forkserver" if "forkserver" in methods else "spawn")


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector paused inside, one collection on the way out (if it was on).

    Drawing a figure, or a report's statistics, allocates ~10^5 linked objects; collections
    triggered meanwhile find nothing (all of it is in use) and took a fifth of the time."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
            gc.collect()


def _run(job: Job) -> str | None:
    with collector_paused():  # the collection afterwards frees the closed figure
        return job.fn(*job.args)


def _start_worker() -> None:
    gc.freeze()  # what the worker inherits (matplotlib, pandas) is never collected: skip it


class Drawing(Mapping):
    """The jobs' results by key, drawn in worker processes started on entry; reading a result
    waits for that figure alone, so the page's other values are computed meanwhile. Use as a
    context manager (the processes end on exit). ``workers``: processes to use (default: the
    usable CPUs); 1, or a single job, draws here, on first read."""

    def __init__(self, jobs: Mapping[Any, Job | Deferred], workers: int | None = None):
        self._jobs = dict(jobs)
        self._deferred = [k for k, j in self._jobs.items() if isinstance(j, Deferred)]
        self._workers = min(workers or usable_cpus(), len(self._jobs))
        self._pool = None
        self._futures: dict[Any, Any] = {}
        self._done: dict[Any, str | None] = {}

    def __enter__(self) -> Drawing:
        if self._workers > 1:
            from concurrent.futures import ProcessPoolExecutor

            from jitbench.report.figures import pyplot

            pyplot()  # import matplotlib (Agg) once, before the workers fork
            self._pool = ProcessPoolExecutor(max_workers=self._workers, mp_context=_context(),
                                             initializer=_start_worker)
            self._submit([k for k, j in self._jobs.items() if isinstance(j, Job)])
            self._submit(self._deferred)
        return self

    def _job(self, key) -> Job:
        job = self._jobs[key]  # KeyError for a figure nobody asked for
        if isinstance(job, Deferred):
            job = self._jobs[key] = job.make()
        return job

    def _submit(self, keys) -> None:
        jobs = {k: self._job(k) for k in keys}
        for k, j in sorted(jobs.items(), key=lambda kv: -kv[1].weight):
            self._futures[k] = self._pool.submit(_run, j)

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def __getitem__(self, key) -> str | None:
        if key not in self._done:
            self._done[key] = (self._futures[key].result() if key in self._futures
                               else _run(self._job(key)))
        return self._done[key]

    def __iter__(self):
        return iter(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)

    def deferred(self, prefix) -> int:
        """How many of the figures keyed ``(prefix, k)`` were given as ``Deferred``."""
        return sum(1 for k in self._deferred if k[0] == prefix)

    def of(self, prefix) -> Mapping[Any, str | None]:
        """The results whose key is ``(prefix, k)``, by ``k`` (one section's figures)."""
        return _Slice(self, prefix)


class _Slice(Mapping):
    def __init__(self, drawing: Drawing, prefix):
        self._d, self._p = drawing, prefix

    def __getitem__(self, k):
        return self._d[(self._p, k)]

    def __iter__(self):
        return (k for p, k in self._d if p == self._p)

    def __len__(self) -> int:
        return sum(1 for _ in self)

