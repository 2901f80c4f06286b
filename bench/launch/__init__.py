"""Every process jitbench starts, from one place: a worker (:func:`start`, which
``jitbench.run.worker_parent.Worker`` drives: JSON lines in and out, a session of its own so a
Ctrl-C reaches the parent only and a timeout can kill the whole process group) and a short tool
command (:func:`tool`: git, nvidia-smi, Graphviz' dot, an A/B arm's interpreter probe) with a
timeout, and a long command in the foreground (:func:`foreground`: a night run in one of the
nightly's two environments, pip upgrading one). Nothing else in ``bench`` imports
``subprocess``: a caller waiting on a child catches :data:`TimeoutExpired` from here."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence

__all__ = ["TimeoutExpired", "foreground", "start", "tool"]

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
