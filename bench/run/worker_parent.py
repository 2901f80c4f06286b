"""The parent side of worker processes: start one, send it case groups, read its rows, and
say how it died (its exit, the mode it was in, the last lines of its log) when it does.

The child side, and the protocol between them, is ``jitbench.run.worker``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

from jitbench import launch
from jitbench.define.workload import Case
from jitbench.protocol.settings import Protocol
from jitbench.run import wire, worker_start

STARTUP_TIMEOUT_S = 300.0


class JobFailed(Exception):
    """A job the worker answered but could not do: ``user_error`` (the caller's input, e.g. a
    function that raises with JIT off) or ``error`` (a bug of the job's handler; the message
    is its traceback)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class WorkerFailed(Exception):
    """A worker died or hung. ``where``: what it last said it was doing (``jitbench.run.worker``);
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

    def row_fields(self, mode: str, log_path: Path) -> dict[str, Any]:
        """What the row of a case in mode ``mode`` of the failed group says about it (for
        ``jitbench.results.row.failure``)."""
        fields = dict(error_type="Worker" + self.status.title(), error_phase=self.phase,
                      worker_exit=self.exit, worker_pid=self.pid, worker_log=str(log_path))
        if self.signal_name:
            fields["worker_signal"] = self.signal_name
        if self.mode and self.mode != mode:
            fields["failed_mode"] = self.mode  # this case was not the culprit, a group-mate
        return fields


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


def live_workers() -> list["Worker"]:
    """Every worker of this process not yet collected (a run kills them all when it stops)."""
    return list(_LIVE)


class Worker:
    """A child process running ``python -m jitbench.run.worker``; JSON lines in and out.

    It runs in a session of its own, so the Ctrl-C a user types reaches the runner only: the
    runner decides what to keep and kills the worker itself."""

    def __init__(self, framework: str, env: dict[str, str], log_path: Path,
                 where_path: Path | None = None, critical=contextlib.nullcontext,
                 import_paths: Sequence[str] | None = None, cwd: str | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT_S, python: str | None = None,
                 protocol_fields: Collection[str] | None = None):
        """``env``: the mode group's variables (``jitbench.run.worker_start.env`` adds the
        rest); ``import_paths``: put first on the child's PYTHONPATH (default: this copy of
        jitbench; ``()``: nothing); ``cwd``: the child's working folder; ``python``: the
        interpreter (default: this one; another one runs the jitbench installed in it);
        ``protocol_fields``: the protocol settings that jitbench knows, the only ones its
        groups are sent (None: all of this one's; an older jitbench's worker fails on a field
        it does not know)."""
        self.framework = framework
        self.protocol_fields = protocol_fields
        self.log_path = Path(log_path)
        self.where_path = Path(where_path) if where_path else \
            self.log_path.with_suffix(".where")
        self._killed = False
        self.proc = None
        full_env = worker_start.env(framework, env,
                                     *([] if import_paths is None else [import_paths]))
        full_env["JITBENCH_RUNNER_PID"] = str(os.getpid())
        self.where_path.write_bytes(b"")  # "nothing said yet" = still starting
        try:
            self.log_offset = self.log_path.stat().st_size
        except OSError:
            self.log_offset = 0
        with critical():  # a Ctrl-C must not land between the fork and owning the child
            self.proc = launch.start([python or sys.executable, "-m", "jitbench.run.worker",
                                      framework, str(self.log_path), str(self.where_path)],
                                     full_env, cwd)
            _LIVE.add(self)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        try:
            self.hello = self._read(startup_timeout, "starting", starting=True)
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
        tail = worker_start.log_tail(self.log_path, self.log_offset)
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
            except launch.TimeoutExpired:
                self.kill()
            raise self._failed("crashed", "", starting)
        try:
            msg = wire.message(line)
            if not isinstance(msg, dict):
                raise ValueError("not an object")
            return msg
        except ValueError:
            self.kill()
            raise WorkerFailed("crashed", f"worker broke the protocol: it wrote {line[:200]!r}",
                               starting=starting, pid=self.pid) from None

    def run_job(self, msg: Mapping[str, Any], timeout: float, doing: str,
                limit: str = "--case-timeout") -> Iterable[dict[str, Any]]:
        """Send one job (``jitbench.run.worker``'s protocol) and yield its rows as they come;
        :class:`WorkerFailed` if the worker dies or the job outlasts ``timeout`` seconds (the
        worker's process group is killed; ``limit`` names the setting in the message),
        :class:`JobFailed` if the worker says it could not do the job."""
        try:
            self.proc.stdin.write(wire.line(msg))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the read below reports how the worker died
        deadline = time.monotonic() + timeout
        over = f"{doing} exceeded the {timeout:g} s limit ({limit})"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise self._failed("timeout", over, False)
            try:
                reply = self._read(left, doing)
            except WorkerFailed as exc:
                if exc.status == "timeout":  # same message whichever wait ran out
                    raise self._failed("timeout", over, False) from None
                raise
            kind = reply.get("type")
            if kind == "group_done":
                return
            if kind in ("user_error", "error"):
                self._drain_done(left)
                raise JobFailed(kind, str(reply.get("message", "")))
            if kind == "row":
                yield reply.get("row") or {}

    def _drain_done(self, timeout: float) -> None:
        """Read up to the ``group_done`` that follows an error reply, so the worker can take
        its next job."""
        try:
            while self._read(max(timeout, 1.0), "ending a failed job").get("type") != \
                    "group_done":
                pass
        except WorkerFailed:
            pass

    def run_group(self, cases: Sequence[Case], protocol: Protocol, timeout: float,
                  insight: Mapping[str, Any] | None = None) -> Iterable[dict[str, Any]]:
        """Rows of the group as the worker sends them; WorkerFailed if it dies or hangs.
        ``insight``: the worker's ``jitbench.xla.capture.Options`` (HLO dumps, profiles).
        The protocol's settings go as far as the worker's jitbench knows them: the only place
        a worker is sent them (``protocol_fields``)."""
        msg = {"group": [c.to_dict() for c in cases],
               "protocol": protocol.as_message(self.protocol_fields)[0]}
        if insight:
            msg["insight"] = dict(insight)
        ids = {c.case_id for c in cases}
        try:
            for row in self.run_job(msg, timeout, "case group"):
                if row.get("case_id") not in ids:
                    self.kill()
                    raise WorkerFailed("crashed", f"worker sent a row for "
                                                  f"{row.get('case_id')!r}, not a case of "
                                                  f"this group", pid=self.pid)
                yield row
        except JobFailed as exc:  # a case group never answers so; say it as a crash
            self.kill()
            raise WorkerFailed("crashed", f"worker could not run the group: {exc}",
                               pid=self.pid) from None

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
            except launch.TimeoutExpired:
                pass

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (launch.TimeoutExpired, OSError):
                self.kill()


def _read_where(path: Path) -> dict | None:
    return wire.read_where(path)
