"""Draw a page's figures side by side in worker processes.

matplotlib spends nearly all of a report's time laying out ticks and text, one figure after
another on one core. Each figure is a ``Job``: a module-level function and the plain data it
takes (DataFrames pickle), so any process can draw it; ``draw_all`` runs them on every usable
core, heaviest first, and returns each one's ``data:`` URI (or None) by key. The page is the
same byte for byte as when drawn in this process.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from collections.abc import Callable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Job:
    """One figure: ``fn(*args)`` returns a data URI or None. ``weight`` orders the queue
    (heaviest first, so the longest figure does not start last); the number of panels or rows
    it draws is a fair guess."""

    fn: Callable[..., str | None]
    args: tuple = ()
    weight: float = 1.0


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _context():
    # fork: the workers start with matplotlib and pandas already imported (~1 s each saved);
    # where there is no fork (Windows, macOS by default) they import them afresh
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else methods[0])


def _run(job: Job) -> str | None:
    return job.fn(*job.args)


def draw_all(jobs: Mapping[Any, Job], workers: int | None = None) -> dict[Any, str | None]:
    """Every job's result by its key. ``workers``: processes to use (default: the usable CPUs);
    1, or a single job, draws here without starting a process."""
    workers = min(workers or usable_cpus(), len(jobs))
    if workers <= 1:
        return {k: _run(j) for k, j in jobs.items()}
    from concurrent.futures import ProcessPoolExecutor

    from .figures import pyplot

    pyplot()  # import matplotlib (Agg) once, before the workers fork
    queue = sorted(jobs.items(), key=lambda kv: -kv[1].weight)
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        futures = {k: pool.submit(_run, j) for k, j in queue}
        return {k: futures[k].result() for k in jobs}
