"""Orchestration: worker processes, time limits, and a row for every case whatever happens.

One worker process per (framework, environment group, device); TensorFlow and JAX never share
a process. The runner sends one case group at a time and appends each row to
``results.jsonl`` (flushed) as soon as it arrives, so nothing measured is lost when a later case
crashes the worker, hangs, or the run is interrupted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from . import meta as meta_mod
from .errors import UserError
from .modes import MODES
from .results import SCHEMA_VERSION, ResultWriter
from .timing import Protocol
from .workload import Case, group_cases

STARTUP_TIMEOUT_S = 300.0
STDERR_TAIL_LINES = 20


class WorkerFailed(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    # XLA's verbose compile logging is noise when explaining a crash
    keep = [ln for ln in text if "mark_for_compilation_pass" not in ln]
    return "\n".join(keep[-lines:])


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


class Worker:
    """A child process running ``python -m bench.worker``; JSON lines in and out."""

    def __init__(self, framework: str, env: dict[str, str], log_path: Path):
        self.framework = framework
        self.log_path = log_path
        full_env = dict(os.environ)
        full_env.update(env)
        # the worker must import this very copy of bench and suites, installed or not
        root = str(Path(__file__).resolve().parent.parent)
        full_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, full_env.get("PYTHONPATH", "")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", framework, str(log_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=full_env, text=True, bufsize=1, start_new_session=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.hello = self._read(STARTUP_TIMEOUT_S, "starting")

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)  # EOF: the worker is gone

    def _read(self, timeout: float, doing: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise WorkerFailed("timeout", f"no answer after {timeout:g} s while {doing}; "
                                          f"worker killed")
        if line is None:
            self.proc.wait(timeout=10)
            raise WorkerFailed("crashed", f"worker {_signal_name(self.proc.returncode)} while "
                                          f"{doing}. Last lines of its output:\n"
                                          f"{_tail(self.log_path)}")
        return json.loads(line)

    def run_group(self, cases: Sequence[Case], protocol: Protocol,
                  timeout: float) -> Iterable[dict[str, Any]]:
        msg = {"group": [c.to_dict() for c in cases], "protocol": dataclasses.asdict(protocol)}
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the read below reports how the worker died
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerFailed("timeout", f"case group exceeded the {timeout:g} s limit "
                                              f"(--case-timeout); worker killed")
            reply = self._read(left, f"running {cases[0].case_id}")
            if reply["type"] == "group_done":
                return
            if reply["type"] == "row":
                yield reply["row"]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait(timeout=30)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, OSError):
                self.kill()


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


@dataclasses.dataclass
class Progress:
    """What the runner tells its caller as it goes (the CLI renders it)."""

    done: int
    total: int
    current: str
    elapsed_s: float


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid() % 10000:04d}"


def run(cases: Sequence[Case], out_root: Path | str = "results", *,
        protocol: Protocol = Protocol(), case_timeout: float = 1800.0,
        run_id: str | None = None, command: Sequence[str] | None = None,
        on_progress: Callable[[Progress], None] | None = None) -> Path:
    """Measure ``cases``; return the run folder holding results.jsonl and meta.json."""
    if not cases:
        raise UserError("no cases match these filters (try `jitbench list` to see them)")
    run_id = run_id or new_run_id()
    run_dir = Path(out_root) / run_id
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "logs").mkdir(exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write results to {str(out_root)!r}: {exc.strerror}") from exc

    meta = meta_mod.collect(run_id, command or sys.argv, protocol, len(cases))
    meta_mod.write(run_dir, meta)
    groups = group_cases(cases)
    groups.sort(key=lambda g: worker_key(g[0]))  # stable: one worker start per key
    started = time.monotonic()
    done = 0
    workers: dict[tuple, Worker] = {}
    status = "complete"
    try:
        with ResultWriter(run_dir / "results.jsonl") as writer:
            for group in groups:
                key = worker_key(group[0])
                if on_progress:
                    modes = ",".join(c.mode for c in group)
                    first = group[0]
                    on_progress(Progress(done, len(cases),
                                         f"{first.workload}/{first.variant} {first.framework} "
                                         f"[{modes}] {first.device} {first.dtype} {first.size}",
                                         time.monotonic() - started))
                # one live worker at a time: two would compete for the same cores
                for other in [k for k in workers if k != key]:
                    workers.pop(other).close()
                seen: set[str] = set()
                try:
                    worker = workers.get(key)
                    if worker is None or not worker.alive():
                        framework, group_name, device = key
                        env = dict(MODES[(group[0].framework, group[0].mode)].env)
                        log = run_dir / "logs" / f"{framework}-{group_name}-{device}.log"
                        worker = workers[key] = Worker(framework, env, log)
                        meta_mod.add_worker(meta, worker.hello)
                    for row in worker.run_group(group, protocol, case_timeout):
                        case = next(c for c in group if c.case_id == row.get("case_id"))
                        writer.write(case_row(case, run_id, **row))
                        seen.add(case.case_id)
                except WorkerFailed as exc:
                    workers.pop(key, None)
                    for case in group:
                        if case.case_id not in seen:
                            writer.write(case_row(case, run_id, status=exc.status,
                                                  error_type="Worker" + exc.status.title(),
                                                  error=str(exc)))
                done += len(group)
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        for w in workers.values():
            w.close() if status == "complete" else w.kill()
        meta_mod.finish(run_dir, meta, status, time.monotonic() - started)
        if on_progress:
            on_progress(Progress(done, len(cases), status, time.monotonic() - started))
    return run_dir
