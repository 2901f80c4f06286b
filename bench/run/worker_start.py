"""How every child process of jitbench starts: a run's workers (``jitbench.run.worker``), sweep
workers (``jitbench.run.sweep``) and ``jitbench.measure``'s isolated workers
(``jitbench.userfn.isolate``). The parent gives it :func:`env`; the child's first act is
:func:`output_to_log`; when it dies, the parent reads :func:`log_tail`."""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from jitbench.define.modes import MODES, framework_worker_env


def _own_copy() -> tuple[str, ...]:
    """Where a child finds this very copy of jitbench: the folder holding the ``jitbench``
    package of an ordinary install (site-packages, a ``pip install --target`` folder); nothing
    for an editable install, whose package folder is the repository's ``bench/`` and which the
    interpreter's own finder serves (putting the repository on the path would hand a user's
    ``import bench`` to jitbench's folder)."""
    package = Path(__file__).resolve().parents[1]
    return (str(package.parent),) if package.name == "jitbench" else ()


ROOT = _own_copy()
LOG_TAIL_LINES = 20
# the cores a child keeps (comma list), set before any framework starts its thread pools
CPU_AFFINITY_ENV = "JITBENCH_CPU_AFFINITY"
# lines XLA writes by the hundred that say nothing about why a child died
_TAIL_NOISE = ("mark_for_compilation_pass", "device_compilation_profiler")


def env(framework: str, mode_env: Mapping[str, str],
        import_paths: Sequence[str] = ROOT) -> dict[str, str]:
    """The environment of a child measuring ``framework`` in a mode group whose environment is
    ``mode_env``: this process's, without any other mode's variables (they must not leak into
    this group), with the framework's worker settings (its log goes to a file: compile counts)
    and ``import_paths`` first on PYTHONPATH."""
    out = dict(os.environ)
    for key in {k for m in MODES.values() for k in m.env}:
        out.pop(key, None)
    out.update(framework_worker_env(framework))
    out.update(mode_env)
    for key in [k for k, v in out.items() if v is None]:  # unset by an A/B arm
        del out[key]
    paths = [*import_paths, *filter(None, out.get("PYTHONPATH", "").split(os.pathsep))]
    out["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return out


def pin_to_cores() -> None:
    """Keep this process on the cores ``JITBENCH_CPU_AFFINITY`` names (the stable process
    profile, ``jitbench.run.options``); called first thing in a worker, before a framework
    sizes its thread pools. Nothing where the variable is unset or the OS cannot pin."""
    value = os.environ.get(CPU_AFFINITY_ENV)
    if value and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {int(c) for c in value.split(",")})
        except (OSError, ValueError) as exc:
            print(f"[jitbench worker] could not pin to cores {value!r}: {exc}", flush=True)


def output_to_log(log_path: str):
    """Point fds 1 and 2 (and ``sys.stdout``/``sys.stderr``) at ``log_path``, before any
    framework is imported, so library chatter never corrupts a protocol and XLA's log lines can
    be parsed; return the original stdout, line-buffered, for the protocol."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = sys.stderr = os.fdopen(log_fd, "w", buffering=1)
    # on SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL: the Python stack of every thread, in the log
    faulthandler.enable(file=sys.stderr, all_threads=True)
    return proto


def log_tail(path: Path | str, offset: int = 0, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines a child wrote to its log since ``offset``, without XLA's noise."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    keep = [ln for ln in text if ln.strip() and not any(n in ln for n in _TAIL_NOISE)]
    return "\n".join(keep[-lines:])
