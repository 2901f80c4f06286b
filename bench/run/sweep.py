"""Recompile sweeps: when does a mode compile, and why (``jitbench sweep``).

A workload declares :class:`~jitbench.define.workload.Sweep`\\ s: an ordered list of call
signatures.
For each sweep, framework, device and mode, one function is built once and called with each
signature in turn, then with each again (``revisit``). Every call is one row of
``sweep.jsonl``:

    {"sweep_version": 1, "workload": "rnn", "sweep": "seq", "framework": "jax", "mode": "jit",
     "jit": true, "device": "cpu", "step": 3, "point": 0, "signature": "seq=8",
     "revisit": true, "status": "ok", "wall_s": 0.0004, "compiles": 0, "traces": 0,
     "trace_s": 0.0, "lower_s": 0.0, "compile_s": 0.0, "reasons": []}

``compiles``/``traces``/``*_s`` are the adapter's counters over that one call (JAX: its
compile events; TF: XLA's log and ``experimental_get_tracing_count``), ``reasons`` what the
framework said about why it traced or compiled (JAX's explained cache misses).

Parent side: :func:`plan` (which jobs), :func:`run` (one worker process per framework and
worker group, on a loop of workers of the sweep's session: ``jitbench.run.session``, its log
under the run folder, a job that outlasts its timeout killed). Worker side: :func:`worker_job`
(the handler ``jitbench.run.worker`` calls), :func:`run_job`. The summary per mode is
``jitbench.analysis.recompilation``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from jitbench.define.modes import MODES
from jitbench.define.workload import Filters, Sweep, Workload, discover, load_workload
from jitbench.errors import UserError
from jitbench.protocol.case_setup import on_device
from jitbench.protocol.settings import Protocol
from jitbench.run.options import RunOptions
from jitbench.run.session import Session
from jitbench.run.worker_parent import JobFailed, WorkerFailed

SWEEP_VERSION = 1
MAX_REASONS = 3  # per call, the first few


@dataclasses.dataclass(frozen=True)
class SweepJob:
    """One sweep of one workload for the modes of one worker group."""

    workload: str
    source: str
    sweep: str
    framework: str
    device: str
    modes: tuple[str, ...]

    @property
    def worker_group(self) -> str:
        return MODES[(self.framework, self.modes[0])].worker_group


def _sweep(wl: Workload, name: str) -> Sweep:
    for s in wl.sweeps:
        if s.name == name:
            return s
    raise UserError(f"workload {wl.name!r} has no sweep {name!r}; valid: "
                    f"{', '.join(s.name for s in wl.sweeps) or '(none)'}")


def plan(filters: Filters, sweeps: Sequence[str] | None = None) -> list[SweepJob]:
    """The jobs a ``jitbench sweep`` with these filters runs (``filters.dtype``,
    ``variant`` and ``size`` do not apply: a sweep names its own)."""
    workloads = discover(filters.suite_files)
    if filters.suite:
        bad = [s for s in filters.suite if s not in workloads]
        if bad:
            raise UserError(f"unknown suite {', '.join(map(repr, bad))}; valid: "
                            f"{', '.join(sorted(workloads))}")
    jobs = []
    for name, (source, wl) in sorted(workloads.items()):
        if filters.suite and name not in filters.suite:
            continue
        for sw in wl.sweeps:
            if sweeps and sw.name not in sweeps:
                continue
            for framework in sorted({fw for (fw, _) in MODES}):
                if filters.framework and framework not in filters.framework:
                    continue
                if (sw.builders.get(framework) or wl.builder(framework)) is None:
                    continue
                for device in filters.device or ("cpu",):
                    groups: dict[str, list[str]] = {}
                    for mode in wl.modes(framework):
                        if not filters.mode or mode in filters.mode:
                            groups.setdefault(MODES[(framework, mode)].worker_group,
                                              []).append(mode)
                    jobs += [SweepJob(name, source, sw.name, framework, device, tuple(modes))
                             for modes in groups.values()]
    if not jobs:
        raise UserError("no sweep matches these filters (workloads with sweeps: " +
                        (", ".join(f"{n} ({', '.join(s.name for s in wl.sweeps)})"
                                   for n, (_, wl) in sorted(workloads.items()) if wl.sweeps)
                         or "none") + ")")
    return jobs


def calls(sweep: Sweep) -> list[tuple[int, bool]]:
    """(point index, is a revisit) in call order: every point, then every point again."""
    first = [(i, False) for i in range(len(sweep.points))]
    return first + ([(i, True) for i in range(len(sweep.points))] if sweep.revisit else [])


def signature(point: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items())


# --------------------------------------------------------------------------- worker side

def run_job(adapter, job: SweepJob) -> list[dict[str, Any]]:
    """Every call of ``job``'s sweep in each of its modes, one row per call (in a worker)."""
    import numpy as np

    wl = load_workload(job.source)
    sw = _sweep(wl, job.sweep)
    base = dict(wl.grid["quick"][0])
    variant = sw.variant or wl.variants[0]
    builder = sw.builders.get(job.framework) or wl.builder(job.framework)
    notes: Callable[[], list[str]] = getattr(adapter, "compile_notes", lambda: [])

    def point(i: int) -> tuple[dict[str, Any], str]:
        p = dict(base, **{k: v for k, v in sw.points[i].items() if k != "dtype"})
        return p, sw.points[i].get("dtype", wl.dtypes[0])

    available, why = adapter.device_available(job.device)
    if not available:  # one skipped row per mode, as `run` gives a case on a missing device
        return [_job_row(job, mode, status="skipped", error=why) for mode in job.modes]
    rows = []
    for mode in job.modes:
        adapter.reset()
        params0, dtype0 = point(0)
        with on_device(adapter, job.device):
            built = builder(params0, dtype0, variant)
        fn = adapter.build(built, mode, job.device)
        for step, (i, revisit) in enumerate(calls(sw)):
            params, dtype = point(i)
            inputs = wl.inputs(params, dtype, np.random.default_rng(0))
            placed = adapter.place(inputs, job.device)
            static = [params[k] for k in sw.static]
            if hasattr(fn, "split_next_call"):  # TF: time a new trace apart from the run
                fn.split_next_call()
            notes()
            before = adapter.counters()
            row: dict[str, Any] = dict(
                sweep_version=SWEEP_VERSION, workload=job.workload, sweep=job.sweep,
                framework=job.framework, device=job.device, mode=mode,
                jit=MODES[(job.framework, mode)].jit, variant=variant, step=step, point=i,
                signature=signature(sw.points[i]), revisit=revisit, status="ok")
            t0 = time.perf_counter()
            try:
                adapter.sync(fn(*placed, *static))
            except Exception as exc:  # noqa: BLE001 -- a failing call is a row
                row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:1000])
            row["wall_s"] = time.perf_counter() - t0
            after = adapter.counters()
            row.update({k: after.get(k, 0) - before.get(k, 0) for k in after})
            row["reasons"] = notes()[:MAX_REASONS]
            rows.append(row)
    return rows


def _job_row(job: SweepJob, mode: str, **fields: Any) -> dict[str, Any]:
    """The row of a mode of ``job`` that made no call (skipped, or its worker failed)."""
    return dict(sweep_version=SWEEP_VERSION, workload=job.workload, source=job.source,
                sweep=job.sweep, framework=job.framework, device=job.device, mode=mode,
                jit=MODES[(job.framework, mode)].jit, **fields)


def worker_job(adapter, msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The handler a worker (``jitbench.run.worker``) runs for ``{"sweep": {...}}``."""
    return run_job(adapter, SweepJob(**{**msg["sweep"], "modes": tuple(msg["sweep"]["modes"])}))


# --------------------------------------------------------------------------- parent side

def run(jobs: Sequence[SweepJob], run_dir: Path, timeout: float = 1800.0,
        on_job: Callable[[SweepJob], None] | None = None,
        command: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Run ``jobs`` (one worker process per framework and worker group) and return their
    rows, recorded in ``run_dir`` by the sweep's session (``Session.create("sweep", ...)``:
    ``sweep_meta.json``, each row appended to ``sweep.jsonl`` as it comes). A worker that
    fails leaves one error row per job it had, with the end of its log."""
    groups: dict[tuple[str, str], list[SweepJob]] = {}
    for job in jobs:
        groups.setdefault((job.framework, job.worker_group), []).append(job)
    rows: list[dict[str, Any]] = []
    run_dir = Path(run_dir)
    # a sweep's workers get no run options of their own: its session's are the defaults
    with Session.create("sweep", run_dir.parent, run_dir.name, jobs,
                        RunOptions(protocol=Protocol(), case_timeout=timeout),
                        command=command) as session:
        with session.running():
            for (framework, group), group_jobs in groups.items():
                _run_group(session, framework, group, group_jobs, on_job, rows)
    return rows


def _run_group(session: Session, framework: str, group: str, group_jobs: list[SweepJob],
               on_job, rows: list[dict[str, Any]]) -> None:
    """One worker's jobs, each row written by the session's record as it comes (never cut in
    half by a signal) and appended to ``rows``."""
    record = session.record
    if on_job:
        for job in group_jobs:
            on_job(job)
    # its workers do no framework warm-up before their calls (a sweep's rows never had one)
    loop = session.loop(warm_up=False, capture=False, log_prefix="sweep-")
    ended = False
    try:
        for job in group_jobs:
            try:
                got = loop.run_job((framework, group, job.device),
                                   {"handler": f"{__name__}:worker_job",
                                    "sweep": dataclasses.asdict(job)},
                                   f"sweep {job.workload}/{job.sweep} {framework}",
                                   limit="timeout")
            except (WorkerFailed, JobFailed) as exc:
                lines = [ln for ln in str(exc).splitlines() if ln.strip()]
                got = [_job_row(job, mode, status="error", error=" | ".join(
                    lines[:1] + lines[-5:])[:2000]) for mode in job.modes]
            session.write(lambda: rows.extend(record.write_row(r) for r in got),
                          rows=len(got))
        ended = True
    finally:
        loop.close(kill=not ended)


def load(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``run_dir/sweep.jsonl`` ([] when the run has no sweep)."""
    path = Path(run_dir) / "sweep.jsonl"
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]

