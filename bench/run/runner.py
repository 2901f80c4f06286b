"""``jitbench run`` and its resume: measure a run's cases on worker processes, a row for every
case whatever happens.

One worker process per (framework, environment group, device); TensorFlow and JAX never share
a process. The run's loop of workers gets one case group at a time and each row is appended to
``results.jsonl`` (flushed and fsynced) as soon as it arrives, so nothing measured is lost when
a later case crashes the worker, hangs, or the run is interrupted.

When a worker dies (signal, abort, exit) or a group exceeds ``case_timeout``, the worker is
killed and replaced (``jitbench.run.groups``). The mode the worker was in (it says so in a
shared file, see ``jitbench.run.worker``) gets the ``crashed`` / ``timeout`` row, with the
signal and the last lines of the worker's log; the group's other modes are measured again in a
fresh worker, without it. A failure outside any one mode (setup, worker start) is the row of
every case of the group.

Ctrl-C, SIGTERM and SIGHUP stop the run between two rows: workers are killed, meta.json says
``interrupted``, and :func:`resume` (``jitbench run --resume RUN_DIR``) measures only the cases
that have no row yet. A run folder holds ``cases.json``, the cases it was asked to measure.

Its parts: what the run was asked to do (``jitbench.run.options``), its session (its birth,
resume, signals, record and loop of workers: ``jitbench.run.session``), its calibration
(``jitbench.run.calibration``) and its warm compile-cache pass (``jitbench.run.compile_cache``);
this module orders them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Sequence

from jitbench.define.workload import Case, group_cases
from jitbench.errors import UserError
from jitbench.frameworks import not_installed
from jitbench.protocol.settings import Protocol
from jitbench.run import compile_cache as compile_cache_mod
from jitbench.run.groups import GroupLoop
from jitbench.run.options import RunOptions
from jitbench.run.progress import Progress, group_line
from jitbench.run.session import Session
from jitbench.run.worker_parent import WorkerFailed


def run(cases: Sequence[Case], out_root: Path | str = "results", *,
        protocol: Protocol = Protocol(), case_timeout: float = 1800.0,
        run_id: str | None = None, command: Sequence[str] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        calibrate: bool = False, compile_cache: str = "off", dump_hlo: bool = False,
        profile: bool = False, matmul_precision: str = "default",
        process_profile: str = "default", cpu_core: int | None = None,
        recalibrate: bool = False) -> Path:
    """Measure ``cases``; return the run folder holding results.jsonl and meta.json.
    The keywords are the fields of :class:`jitbench.run.options.RunOptions`: ``calibrate``: first
    measure the machine's matmul peak and each mode's dispatch floor (jitbench.run.calibration,
    seconds, on each worker before its cases) into meta["calibration"], or take the one kept
    from an earlier run on this machine and software (``jitbench.run.calibration.kept``;
    ``recalibrate``: measure it anyway). ``compile_cache``: off, cold or warm
    (``jitbench.run.compile_cache``). ``dump_hlo`` / ``profile``: keep each JIT mode's optimized
    HLO / a profiler trace of each mode under ``cases/`` (``jitbench.xla.capture``).
    ``matmul_precision``: default (the frameworks' own: TF32 on recent GPUs) or highest.
    ``process_profile``: how workers start (``jitbench.run.options.PROCESS_PROFILES``);
    ``cpu_core``: the core ``stable`` pins them to (default: the lowest this process may use).

    Raises :class:`Interrupted` (a KeyboardInterrupt) on Ctrl-C / SIGTERM / SIGHUP, after
    marking the run ``interrupted``; continue it with :func:`resume`."""
    if not cases:
        raise UserError("no cases match these filters (try `jitbench list` to see them)")
    options = RunOptions(protocol=protocol, case_timeout=case_timeout, calibrate=calibrate,
                         compile_cache=compile_cache, dump_hlo=dump_hlo,
                         profile=profile, matmul_precision=matmul_precision,
                         process_profile=process_profile, cpu_core=cpu_core).check()
    with Session.create("run", out_root, run_id, cases, options, command=command,
                        on_progress=on_progress, extra=(
                            [options.cache_folder(".").name]
                            if options.compile_cache != "off" else [])) as session:
        # once per run, on the run's own workers before their cases (or kept from an earlier
        # run on this machine and software); in meta.json, not results
        here = [c for c in cases if not not_installed(c.framework)]
        cal = _calibration(session, here, recalibrate) if calibrate and here else None
        _execute(session, list(cases), cal)
    return session.run_dir


def _warm_pass(ex: Session) -> None:
    """With ``--compile-cache warm``: the first calls again with the cache the run filled, inside
    the run's session (before it is ``complete``; a Ctrl-C here leaves a run ``--resume``
    finishes), once: rows that have their warm fields (``first_call_cold_s``) are done."""
    if ex.options.compile_cache != "warm":
        return
    if all("first_call_cold_s" in r for r in ex.record.rows_as_written()
           if r.get("status") == "ok"):
        return
    compile_cache_mod.warm_pass(ex)


def resume(run_dir: Path | str, *, case_timeout: float | None = None,
           command: Sequence[str] | None = None,
           on_progress: Callable[[Progress], None] | None = None) -> Path:
    """Measure the cases of ``run_dir`` that have no row yet, with the run's own options
    (``RunOptions.from_meta``), appending to its results.jsonl. Nothing to do is not an
    error: returns at once."""
    with Session.resume(run_dir, case_timeout=case_timeout,
                        on_progress=on_progress) as (session, cases, recorded):
        done = {r.get("case_id") for r in recorded}
        pending = [c for c in cases if c.case_id not in done]
        session.progress(f"resuming {run_dir}: {len(pending)} of {len(cases)} cases have no "
                         f"row yet" if pending else
                         f"nothing to resume: every case of {run_dir} has a row")
        if pending or session.record.meta.get("status") != "complete":
            # interrupted after its last row, or in the warm compile-cache pass: ends again
            session.restart(len(pending), command)
            _execute(session, pending)
    return session.run_dir


def _calibration(session: Session, cases: Sequence[Case], recalibrate: bool):
    """The run's :class:`~jitbench.run.calibration.Calibration` to measure, started, or None
    when a kept one fits (then it is in the record already)."""
    from jitbench.run.calibration import Calibration

    cal = Calibration(cases, session.options.worker_env(session.run_dir))
    found = None if recalibrate else cal.kept_summary()
    if found is not None:
        session.record.set_calibration(found)
        return None
    cal.start()
    return cal


def _execute(ex: Session, cases: list[Case], cal=None) -> None:
    """Measure ``cases`` into ``ex.run_dir``; ``ex.done`` rows of ``ex.total`` exist. ``cal``:
    the run's calibration, whose groups go first on each worker."""
    loop = ex.loop()
    # the warm pass rewrites results.jsonl: after its writer is closed
    with ex.running(cleanup=lambda status: loop.close(kill=status != "complete",
                                                      everyone=status == "interrupted"),
                    then=lambda: _warm_pass(ex)):
        if cases:
            _measure_all(ex, loop, cases, cal)


def _measure_all(ex: Session, loop: GroupLoop, cases: list[Case], cal=None) -> None:
    # a framework this interpreter lacks: its cases are skipped rows that say how to install it
    absent = {fw: why for fw in {c.framework for c in cases} if (why := not_installed(fw))}
    for case in [c for c in cases if c.framework in absent]:
        ex.write(lambda case=case: ex.record.write_failure(case, "skipped",
                                                           absent[case.framework]))
    cases = [c for c in cases if c.framework not in absent]

    def on_group(group: Sequence[Case]) -> None:
        first = group[0]
        ex.progress(f"{first.workload}/{first.variant} {first.framework} "
                    f"[{','.join(c.mode for c in group)}] {first.device} {first.dtype} "
                    f"{first.size}")

    # each group's rows as they come; its verdicts shown as soon as its last row is written
    ending: dict[str, list[Case]] = {}
    rows_of: dict[int, list[dict[str, Any]]] = {}

    def ended(case_id: str | None, row: dict[str, Any]) -> None:
        group = ending.get(case_id or "")
        if group is None:
            return
        got = rows_of.setdefault(id(group), [])
        got.append(row)
        if len(got) == len(group):
            ex.progress(f"  {group_line(dataclasses.asdict(group[0]), got)}")

    def on_row(row: dict[str, Any], retried: str | None) -> None:
        # the worker wrote the whole row (jitbench.results.row); the record adds the run's id
        ex.write(lambda: ex.record.write_row(row, retried))
        ended(row.get("case_id"), row)

    def on_failure(case: Case, exc: WorkerFailed, log: Path, retried: str | None) -> None:
        ex.write(lambda: ex.record.write_failure(case, exc.status, str(exc), retried,
                                                 **exc.row_fields(case.mode, log)))
        ended(case.case_id, {"mode": case.mode, "status": exc.status})

    measured = group_cases(cases)
    ending.update({c.case_id: group for group in measured for c in group})
    if cal is None:
        loop.run(measured, on_row, on_failure, on_group)
        return
    # the calibration's groups first, so each worker measures its own before its cases; it
    # brings its own handlers for them
    row, failure, group, protocol_for = cal.handlers(ex.record, ex.progress, on_row,
                                                     on_failure, on_group)
    loop.run(cal.groups() + measured, row, failure, group, protocol_for=protocol_for)
