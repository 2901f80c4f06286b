"""Orchestration: worker processes, time limits, and a row for every case whatever happens.

One worker process per (framework, environment group, device); TensorFlow and JAX never share
a process. The runner sends one case group at a time and appends each row to
``results.jsonl`` (flushed and fsynced) as soon as it arrives, so nothing measured is lost when
a later case crashes the worker, hangs, or the run is interrupted.

When a worker dies (signal, abort, exit) or a group exceeds ``case_timeout``, the worker is
killed and replaced. The mode the worker was in (it says so in a shared file, see
``bench.worker``) gets the ``crashed`` / ``timeout`` row, with the signal and the last lines of
the worker's log; the group's other modes are measured again in a fresh worker, without it.
A failure outside any one mode (setup, worker start) is the row of every case of the group.

Ctrl-C, SIGTERM and SIGHUP stop the run between two rows: workers are killed, meta.json says
``interrupted``, and :func:`resume` (``jitbench run --resume RUN_DIR``) measures only the cases
that have no row yet. A run folder holds ``cases.json``, the cases it was asked to measure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from . import meta as meta_mod
from .errors import DataWarning, Interrupted, UserError
from .modes import MODES
from .results import SCHEMA_VERSION, ResultWriter, load_meta, read_rows, repair_tail
from .timing import Protocol
from .workload import Case, group_cases

STARTUP_TIMEOUT_S = 300.0
STDERR_TAIL_LINES = 20
CASES_FILE = "cases.json"
LOCK_FILE = ".lock"
STOP_SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None),
                                 getattr(signal, "SIGHUP", None)) if s is not None)

# log lines that explain nothing when a worker dies: XLA's verbose compile bookkeeping
_TAIL_NOISE = ("mark_for_compilation_pass", "device_compilation_profiler")


class WorkerFailed(Exception):
    """A worker died or hung. ``where``: what it last said it was doing (``bench.worker``);
    ``exit``: how it ended; ``starting``: it never said hello."""

    def __init__(self, status: str, message: str, where: dict | None = None,
                 exit: str | None = None, signal_name: str | None = None,
                 starting: bool = False, pid: int | None = None):
        super().__init__(message)
        self.status = status
        self.where = where
        self.exit = exit
        self.signal_name = signal_name
        self.starting = starting
        self.pid = pid

    @property
    def mode(self) -> str | None:
        return (self.where or {}).get("mode")

    @property
    def phase(self) -> str:
        if self.starting:
            return "worker start (importing the framework)"
        return (self.where or {}).get("phase") or "unknown"


def _tail(path: Path, offset: int = 0, lines: int = STDERR_TAIL_LINES) -> str:
    """The last lines a worker wrote to its log since ``offset``, without XLA's noise."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    keep = [ln for ln in text if ln.strip() and not any(n in ln for n in _TAIL_NOISE)]
    return "\n".join(keep[-lines:])


def _exit_text(returncode: int | None, killed_by_us: bool) -> tuple[str, str | None]:
    """("killed by signal SIGSEGV", "SIGSEGV") from a Popen return code."""
    if returncode is None:
        return "still running", None
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        text = f"killed by signal {name}"
        if name == "SIGKILL" and not killed_by_us:
            text += " (not sent by jitbench: often the kernel's out-of-memory killer)"
        return text, name
    return f"exited with code {returncode}", None


_LIVE: "weakref.WeakSet[Worker]" = weakref.WeakSet()


class Worker:
    """A child process running ``python -m bench.worker``; JSON lines in and out.

    It runs in a session of its own, so the Ctrl-C a user types reaches the runner only: the
    runner decides what to keep and kills the worker itself."""

    def __init__(self, framework: str, env: dict[str, str], log_path: Path,
                 where_path: Path | None = None, critical=contextlib.nullcontext):
        self.framework = framework
        self.log_path = Path(log_path)
        self.where_path = Path(where_path) if where_path else \
            self.log_path.with_suffix(".where")
        self._killed = False
        self.proc = None
        full_env = dict(os.environ)
        full_env.update(env)
        # the worker must import this very copy of bench and suites, installed or not
        root = str(Path(__file__).resolve().parent.parent)
        full_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, full_env.get("PYTHONPATH", "")) if p)
        full_env["JITBENCH_RUNNER_PID"] = str(os.getpid())
        self.where_path.write_bytes(b"")  # "nothing said yet" = still starting
        try:
            self.log_offset = self.log_path.stat().st_size
        except OSError:
            self.log_offset = 0
        with critical():  # a Ctrl-C must not land between the fork and owning the child
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bench.worker", framework, str(self.log_path),
                 str(self.where_path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=full_env, text=True, bufsize=1, start_new_session=True)
            _LIVE.add(self)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        try:
            self.hello = self._read(STARTUP_TIMEOUT_S, "starting", starting=True)
        except BaseException:
            self.kill()
            raise
        if self.hello.get("type") != "hello":
            self.kill()
            raise WorkerFailed("crashed", f"worker sent {self.hello!r} instead of hello",
                               starting=True, pid=self.proc.pid)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)  # EOF: the worker is gone

    def _failed(self, status: str, what: str, starting: bool) -> WorkerFailed:
        where = None if starting else _read_where(self.where_path)
        how, sig = _exit_text(self.proc.returncode, self._killed)
        in_mode = ""
        if where and where.get("mode"):
            in_mode = f" in mode {where['mode']} ({where.get('phase')})"
        elif where:
            in_mode = f" during {where.get('phase')}"
        if status == "timeout":
            head = f"{what}{in_mode}; worker killed"
        else:
            head = f"worker {how}{in_mode}"
        tail = _tail(self.log_path, self.log_offset)
        message = f"{head}. Last lines of its log ({self.log_path.name}):\n{tail}" if tail \
            else f"{head}."
        return WorkerFailed(status, message, where=where, exit=how, signal_name=sig,
                            starting=starting, pid=self.pid)

    def _read(self, timeout: float, doing: str, starting: bool = False) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=min(timeout, threading.TIMEOUT_MAX))
        except queue.Empty:
            self.kill()
            what = (f"no hello after {timeout:g} s while starting" if starting
                    else f"no answer within {timeout:g} s while {doing}")
            raise self._failed("timeout", what, starting) from None
        if line is None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
            raise self._failed("crashed", "", starting)
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise ValueError("not an object")
            return msg
        except ValueError:
            self.kill()
            raise WorkerFailed("crashed", f"worker broke the protocol: it wrote {line[:200]!r}",
                               starting=starting, pid=self.pid) from None

    def run_group(self, cases: Sequence[Case], protocol: Protocol,
                  timeout: float) -> Iterable[dict[str, Any]]:
        """Rows of the group as the worker sends them; WorkerFailed if it dies or hangs."""
        msg = {"group": [c.to_dict() for c in cases], "protocol": dataclasses.asdict(protocol)}
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the read below reports how the worker died
        deadline = time.monotonic() + timeout
        ids = {c.case_id for c in cases}
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise self._failed("timeout", f"case group exceeded the {timeout:g} s limit "
                                              f"(--case-timeout)", False)
            try:
                reply = self._read(left, f"running {cases[0].case_id}")
            except WorkerFailed as exc:
                if exc.status == "timeout":  # same message whichever wait ran out
                    raise self._failed("timeout", f"case group exceeded the {timeout:g} s "
                                                  f"limit (--case-timeout)", False) from None
                raise
            if reply.get("type") == "group_done":
                return
            if reply.get("type") == "row":
                row = reply.get("row") or {}
                if row.get("case_id") not in ids:
                    self.kill()
                    raise WorkerFailed("crashed", f"worker sent a row for "
                                                  f"{row.get('case_id')!r}, not a case of "
                                                  f"this group", pid=self.pid)
                yield row

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._killed = True
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, OSError):
                self.kill()


def _read_where(path: Path) -> dict | None:
    from .worker import read_where  # the worker module owns the format

    return read_where(path)


def worker_key(case: Case) -> tuple[str, str, str]:
    return (case.framework, MODES[(case.framework, case.mode)].worker_group, case.device)


def case_row(case: Case, run_id: str, **fields) -> dict[str, Any]:
    """The fields every row has, whatever happened to the case."""
    row = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "case_id": case.case_id,
           "workload": case.workload, "variant": case.variant, "size": case.size,
           "size_set": case.size_set, "params": case.params, "dtype": case.dtype,
           "framework": case.framework, "mode": case.mode, "jit": case.jit,
           "device": case.device, "source": case.source}
    row.update(fields)
    return row


def failure_row(case: Case, run_id: str, exc: WorkerFailed, log_path: Path) -> dict[str, Any]:
    fields = dict(status=exc.status, error_type="Worker" + exc.status.title(), error=str(exc),
                  error_phase=exc.phase, worker_exit=exc.exit, worker_pid=exc.pid,
                  worker_log=str(log_path))
    if exc.signal_name:
        fields["worker_signal"] = exc.signal_name
    if exc.mode and exc.mode != case.mode:
        fields["failed_mode"] = exc.mode  # this case was not the culprit, only its group-mate
    reason = _expected_failure(case)
    if reason:
        fields["expected_failure"] = reason
    return case_row(case, run_id, **fields)


def _expected_failure(case: Case) -> str | None:
    """The workload's reason to expect this case to fail (the worker says it for the rows it
    writes; the runner, for the rows of a worker that died)."""
    from .workload import load_workload

    try:
        failures = load_workload(case.source).expected_failures
    except Exception:  # the row is written anyway; the reason is extra information
        return None
    return (failures.get((case.framework, case.mode, case.variant))
            or failures.get((case.framework, case.mode)))


@dataclasses.dataclass
class Progress:
    """What the runner tells its caller as it goes (the CLI renders it)."""

    done: int
    total: int
    current: str
    elapsed_s: float


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid() % 10000:04d}"


# --------------------------------------------------------------------------- signals

class _StopOnSignals:
    """Turn Ctrl-C, SIGTERM and SIGHUP into one :class:`Interrupted`, raised outside critical
    sections (a row being appended, a worker being started), once; later signals are ignored
    while the run cleans up. Only in the main thread (elsewhere Python allows no handlers)."""

    def __init__(self):
        self.signum: int | None = None
        self._raised = False
        self._disarmed = False
        self._depth = 0
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "_StopOnSignals":
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
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0 and self.signum is not None and not self._raised:
            self._raised = True
            raise Interrupted(self.signum)


@contextlib.contextmanager
def _lock(run_dir: Path) -> Iterator[None]:
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


# --------------------------------------------------------------------------- run / resume

def check_writable(folder: Path | str, what: str) -> Path:
    """Create ``folder`` if needed and prove a file can be written in it, before measuring
    anything; UserError naming ``what`` (e.g. "--out") otherwise."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{what} {str(folder)!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".jitbench-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"{what} {str(folder)!r} cannot be written: "
                        f"{exc.strerror or exc}") from exc
    return folder


def _write_cases(run_dir: Path, cases: Sequence[Case]) -> None:
    tmp = run_dir / (CASES_FILE + ".tmp")
    tmp.write_text(json.dumps({"schema_version": SCHEMA_VERSION,
                               "cases": [c.to_dict() for c in cases]}, indent=1))
    os.replace(tmp, run_dir / CASES_FILE)


def run(cases: Sequence[Case], out_root: Path | str = "results", *,
        protocol: Protocol = Protocol(), case_timeout: float = 1800.0,
        run_id: str | None = None, command: Sequence[str] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        calibrate: bool = False) -> Path:
    """Measure ``cases``; return the run folder holding results.jsonl and meta.json.
    ``calibrate``: first measure the machine's matmul peak and each mode's dispatch floor
    (bench.calibration, ~10 s) into meta["calibration"].

    Raises :class:`Interrupted` (a KeyboardInterrupt) on Ctrl-C / SIGTERM / SIGHUP, after
    marking the run ``interrupted``; continue it with :func:`resume`."""
    if not cases:
        raise UserError("no cases match these filters (try `jitbench list` to see them)")
    _check_timeout(case_timeout)
    run_id = run_id or new_run_id()
    if not run_id or "/" in run_id or run_id in (".", ".."):
        raise UserError(f"run id {run_id!r} cannot name a folder")
    check_writable(out_root, "results folder")
    run_dir = Path(out_root) / run_id
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "logs").mkdir(exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write results to {str(out_root)!r}: "
                        f"{exc.strerror or exc}") from exc
    with _lock(run_dir):
        results = run_dir / "results.jsonl"
        if results.is_file() and results.stat().st_size > 0:
            raise UserError(f"{str(run_dir)!r} already holds results; continue it with "
                            f"`jitbench run --resume {run_dir}` or choose another run id")
        meta = meta_mod.collect(run_id, command or sys.argv, protocol, len(cases))
        meta["case_timeout_s"] = case_timeout
        _write_cases(run_dir, cases)
        meta_mod.write(run_dir, meta)

        def calibration_hook() -> None:
            if calibrate:  # once per run, before any case; kept in meta.json, not results
                from . import calibration
                meta["calibration"] = calibration.measure(cases, run_dir / "logs",
                                                          on_progress)
                meta_mod.write(run_dir, meta)

        _execute(run_dir, run_id, meta, list(cases), len(cases), 0, protocol, case_timeout,
                 on_progress, before=calibration_hook)
    return run_dir


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


def resume(run_dir: Path | str, *, case_timeout: float | None = None,
           command: Sequence[str] | None = None,
           on_progress: Callable[[Progress], None] | None = None) -> Path:
    """Measure the cases of ``run_dir`` that have no row yet, with the run's own protocol,
    appending to its results.jsonl. Nothing to do is not an error: returns at once."""
    run_dir = Path(run_dir)
    load_run(run_dir, quiet=True)  # a clear error before taking the lock; damage is
    # reported once, below, when it is repaired
    with _lock(run_dir):
        repair_tail(run_dir / "results.jsonl")  # a row cut in half by a kill: measure again
        meta, cases, rows = load_run(run_dir)
        done = {r.get("case_id") for r in rows}
        pending = [c for c in cases if c.case_id not in done]
        if on_progress:
            on_progress(Progress(len(cases) - len(pending), len(cases),
                                 f"resuming {run_dir}: {len(pending)} of {len(cases)} cases "
                                 f"have no row yet" if pending else
                                 f"nothing to resume: every case of {run_dir} has a row", 0.0))
        if not pending:
            if meta.get("status") != "complete":  # interrupted after its last row
                meta_mod.start_resume(run_dir, meta, command or sys.argv, 0)
                meta_mod.finish(run_dir, meta, "complete", 0.0, n_recorded=len(cases))
            return run_dir
        known = {f.name for f in dataclasses.fields(Protocol)}
        protocol = Protocol(**{k: v for k, v in meta.get("protocol", {}).items() if k in known})
        if case_timeout is None:
            case_timeout = float(meta.get("case_timeout_s") or 1800.0)
        _check_timeout(case_timeout)
        (run_dir / "logs").mkdir(exist_ok=True)
        meta_mod.start_resume(run_dir, meta, command or sys.argv, len(pending))
        _execute(run_dir, meta["run_id"], meta, pending, len(cases), len(cases) - len(pending),
                 protocol, case_timeout, on_progress)
    return run_dir


def _check_timeout(case_timeout: float) -> None:
    if not (isinstance(case_timeout, (int, float)) and math.isfinite(case_timeout)
            and case_timeout > 0):
        raise UserError(f"case timeout must be a finite number of seconds > 0, "
                        f"got {case_timeout!r}")


def _execute(run_dir: Path, run_id: str, meta: dict[str, Any], cases: list[Case], total: int,
             already: int, protocol: Protocol, case_timeout: float,
             on_progress: Callable[[Progress], None] | None,
             before: Callable[[], None] | None = None) -> None:
    """Measure ``cases`` into ``run_dir``; ``already`` rows of ``total`` exist."""
    started = time.monotonic()
    done = already
    status, signal_name = "failed", None
    stopper = _StopOnSignals()
    workers: dict[tuple, Worker] = {}
    try:
        with stopper:
            try:
                if before is not None:
                    before()
                with ResultWriter(run_dir / "results.jsonl") as writer:
                    def write(row: dict[str, Any]) -> None:
                        nonlocal done
                        with stopper.critical():
                            writer.write(row)
                            done += 1

                    _measure_all(run_dir, run_id, meta, cases, total, protocol, case_timeout,
                                 on_progress, started, workers, write, stopper,
                                 lambda: done)
                status = "complete"
            except KeyboardInterrupt as exc:
                status = "interrupted"
                signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
                signal_name = signal.Signals(signum).name
                raise Interrupted(signum, run_dir, done, total) from None
            finally:
                stopper.disarm()
                for w in list(workers.values()) + list(_LIVE):
                    if status == "complete":
                        w.close()
                    else:
                        w.kill()
                meta_mod.finish(run_dir, meta, status, time.monotonic() - started,
                                interrupted_by=signal_name, n_recorded=done)
    finally:
        if on_progress:
            on_progress(Progress(done, total, status, time.monotonic() - started))


def _measure_all(run_dir, run_id, meta, cases, total, protocol, case_timeout, on_progress,
                 started, workers, write, stopper, done) -> None:
    groups = group_cases(cases)
    groups.sort(key=lambda g: worker_key(g[0]))  # stable: one worker start per key
    todo = deque(groups)
    start_failures: dict[tuple, int] = {}
    broken: dict[tuple, WorkerFailed] = {}
    retried: dict[str, str] = {}  # case_id -> why it was measured again without a group-mate
    while todo:
        group = todo.popleft()
        key = worker_key(group[0])
        framework, group_name, device = key
        log = run_dir / "logs" / f"{framework}-{group_name}-{device}.log"
        if on_progress:
            first = group[0]
            on_progress(Progress(done(), total,
                                 f"{first.workload}/{first.variant} {first.framework} "
                                 f"[{','.join(c.mode for c in group)}] {first.device} "
                                 f"{first.dtype} {first.size}",
                                 time.monotonic() - started))
        # one live worker at a time: two would compete for the same cores
        for other in [k for k in workers if k != key]:
            workers.pop(other).close()

        def fail(case: Case, exc: WorkerFailed) -> None:
            row = failure_row(case, run_id, exc, log)
            if case.case_id in retried:
                row["retried_after"] = retried[case.case_id]
            write(row)

        if key in broken:  # its worker failed to start twice: do not wait on it again
            for case in group:
                fail(case, broken[key])
            continue
        seen: set[str] = set()
        try:
            worker = workers.get(key)
            if worker is None or not worker.alive():
                env = dict(MODES[(group[0].framework, group[0].mode)].env)
                worker = workers[key] = Worker(framework, env, log, critical=stopper.critical)
                meta_mod.add_worker(meta, dict(worker.hello, env_group=group_name))
                start_failures.pop(key, None)
            for row in worker.run_group(group, protocol, case_timeout):
                case = next(c for c in group if c.case_id == row["case_id"])
                extra = {"retried_after": retried[case.case_id]} \
                    if case.case_id in retried else {}
                write(case_row(case, run_id, **row, **extra))
                seen.add(case.case_id)
        except WorkerFailed as exc:
            workers.pop(key, None)
            meta_mod.worker_failed(meta, exc.pid, exc.status, exc.exit or "", exc.phase)
            if exc.starting:
                start_failures[key] = start_failures.get(key, 0) + 1
                if start_failures[key] >= 2:
                    broken[key] = exc
            pending = [c for c in group if c.case_id not in seen]
            culprits = [c for c in pending if c.mode == exc.mode]
            rest = [c for c in pending if c.mode != exc.mode]
            if culprits and rest:
                # pin it on the mode that was running; its group-mates get a fresh worker
                for case in culprits:
                    fail(case, exc)
                short_exit = (exc.exit or "").split(" (")[0]
                what = "timed out" if exc.status == "timeout" else f"{exc.status} ({short_exit})"
                why = (f"mode {exc.mode} of the same group {what}; measured again in a fresh "
                       f"worker without it")
                for case in rest:
                    retried[case.case_id] = why
                todo.appendleft(rest)
            else:
                for case in pending:
                    fail(case, exc)
