"""Every process jitbench starts, from one place: a worker (:func:`start`, which
``jitbench.run.worker_parent.Worker`` drives: JSON lines in and out, a session of its own so a
Ctrl-C reaches the parent only and a timeout can kill the whole process group) and a short tool
command (:func:`tool`: git, nvidia-smi, Graphviz' dot, an A/B arm's interpreter probe) with a
timeout, a long command in the foreground (:func:`foreground`) and one that the signals this
process gets are passed on to (:func:`forward`: a night run in one of the nightly's two
environments, pip upgrading one). Nothing else in ``bench`` imports
``subprocess``: a caller waiting on a child catches :data:`TimeoutExpired` from here."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

__all__ = ["TimeoutExpired", "foreground", "forward", "start", "tool"]

TimeoutExpired = subprocess.TimeoutExpired  # what a child's wait(timeout) raises


def start(argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None
          ) -> subprocess.Popen:
    """A child with pipes for stdin and stdout (text, line-buffered), stderr discarded (a
    worker points its own output at its log), in a session of its own."""
    return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=dict(env), text=True, bufsize=1,
                            start_new_session=True, cwd=cwd)


def tool(argv: Sequence[str], timeout: float, cwd: str | None = None,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess | None:
    """A short command's completed process (output captured as text), or None when it could
    not run (not installed, not permitted) or outlasted ``timeout`` seconds. ``env``: its whole
    environment (default: this process's)."""
    try:
        return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, check=False,
                              env=None if env is None else dict(env))
    except (OSError, subprocess.SubprocessError):
        return None


def foreground(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """A command run to its end with this process's output streams (what it prints is
    printed), in this process's group so a Ctrl-C reaches it too; its exit code (127 when it
    could not start)."""
    try:
        return subprocess.run(list(argv), check=False,
                              env=None if env is None else dict(env)).returncode
    except OSError:
        return 127


# what forward passes on: the signals a run stops cleanly on (jitbench.run.signals)
FORWARDED = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None),
                              getattr(signal, "SIGHUP", None)) if s is not None)


# a process group of its own (Python 3.10 has no process_group: a session of its own then)
_OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}


def forward(argv: Sequence[str], env: Mapping[str, str] | None = None,
            pass_fds: Sequence[int] = (), forwarded: list[int] | None = None) -> int:
    """A long command run to its end with this process's output streams, that Ctrl-C, SIGTERM
    and SIGHUP sent to this process reach once, and then are waited on: the child gets the
    time its own clean stop takes (a night stops its workers and keeps its rows), where
    ``subprocess.run`` would kill it a quarter of a second after a Ctrl-C, and a SIGTERM would
    end this process and leave the child running alone.

    The child runs in a process group of its own, so that a Ctrl-C typed in a terminal (which
    reaches the whole foreground group) arrives once, through this process, not twice. Its exit
    code, as it returns it (130, 143: its clean stop); 128 + N when a signal N ended it
    unhandled; 127 when it could not start. ``pass_fds``: descriptors it inherits (a lock it
    holds with this process). ``forwarded``: where the signals passed on are listed, for a
    caller to tell a stop from a failure. The handlers are this process's own again after."""
    child: subprocess.Popen | None = None
    pending: list[int] = []

    def send(signum, frame) -> None:
        if forwarded is not None:
            forwarded.append(signum)
        if child is None:
            pending.append(signum)  # before the child started: sent as soon as it has
            return
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    old = {}
    if threading.current_thread() is threading.main_thread():  # elsewhere: no handlers
        old = {s: signal.signal(s, send) for s in FORWARDED}
    try:
        try:
            child = subprocess.Popen(list(argv), env=None if env is None else dict(env),
                                     pass_fds=tuple(pass_fds), **_OWN_GROUP)
        except OSError:
            return 127
        for signum in pending:
            child.send_signal(signum)
        code = child.wait()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    return 128 - code if code < 0 else code
