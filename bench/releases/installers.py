"""The installers that build the environments per release (``jitbench.releases.envs``): which
of uv and pip is there, the commands that make an environment, install into it and build
jitbench's wheel, and what their output says when they failed (its last lines; whether the
failure was of the moment: a timeout, a kill, the network).

uv where it is found (the ``releases`` extra), pip otherwise; a caller's interpreter without
pip (a uv-made environment) builds jitbench's wheel with ``uv build``."""

from __future__ import annotations

import importlib.util
import re
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from jitbench.errors import UserError

__all__ = ["INSTALLERS", "find_uv", "has_pip", "install_command", "no_pip", "reason",
           "transient", "venv_command", "wheel_command"]

INSTALLERS = ("uv", "pip")

# lines of an installer's output kept as the reason it failed
REASON_LINES = 12
# the signals that end a process from outside (the OOM killer's SIGKILL, a kill, a Ctrl-C):
# no property of what it ran. A crash (SIGSEGV, SIGILL, SIGABRT: a release built for another
# CPU) comes back every time and is remembered.
KILLS = frozenset(int(s) for s in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT,
                                    signal.SIGHUP))
# what pip and uv print when the index could not be reached: a failure of the network, not of
# the release (matched case-blind in their output; only messages no other failure prints)
NETWORK = re.compile(
    r"error sending request for url|tcp connect error|dns error|connection refused"
    r"|connection reset|network is unreachable|temporary failure in name resolution"
    r"|name or service not known|newconnectionerror|connecttimeouterror|readtimeouterror"
    r"|max retries exceeded with url|connection broken by|operation timed out"
    r"|request failed after \d+ retr", re.IGNORECASE)


def find_uv() -> str | None:
    """The ``uv`` executable: the one the ``uv`` package installs (the ``releases`` extra),
    else one on PATH; None without either."""
    try:
        from uv import find_uv_bin  # deferred: an optional extra
        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def has_pip() -> bool:
    """Whether this interpreter has pip (a uv-made environment may have none)."""
    return importlib.util.find_spec("pip") is not None


def no_pip(needed_for: str) -> UserError:
    """The error that says this interpreter has no pip, what needed it, and how to add it."""
    return UserError(f"pip is not installed in {sys.executable}; {needed_for}: install it "
                     f"there ({find_uv() or 'uv'} pip install --python {sys.executable} pip, "
                     f"or {sys.executable} -m ensurepip)")


def wheel_command(source: Path, out: Path) -> tuple[list[str], str]:
    """How this interpreter builds the wheel of ``source`` into ``out``: pip where it has it,
    else ``uv build`` (setuptools from this interpreter where it has it, as pip does; else
    fetched by uv into an isolated build), else a UserError saying what to install."""
    if has_pip():
        return ([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                 "--no-build-isolation", "-w", str(out), str(source)], "pip wheel")
    uv = find_uv()
    if uv is None:
        raise no_pip("building jitbench's wheel needs pip, or uv (pip install "
                      "'jitbench[releases]', or uv on PATH)")
    own = (["--no-build-isolation"] if importlib.util.find_spec("setuptools") is not None
           else [])
    return ([uv, "build", "--quiet", "--wheel", *own, "--python", sys.executable,
             "--out-dir", str(out), str(source)], "uv build")


def venv_command(installer: str, target: Path, uv: str | None) -> list[str]:
    """The command that makes an empty environment in ``target`` on this interpreter."""
    if installer == "uv":
        # relocatable: its scripts find their interpreter relative to themselves, so the
        # folder still works after the rename into place; seeded with pip, so a user can add
        # to it without uv
        return [uv, "venv", "--quiet", "--seed", "--relocatable", "--python", sys.executable,
                str(target)]
    return [sys.executable, "-m", "venv", str(target)]


def install_command(installer: str, python: Path, uv: str | None, args: Sequence[str]
                    ) -> list[str]:
    """The command that installs ``args`` into the environment of ``python``."""
    if installer == "uv":
        return [uv, "pip", "install", "--quiet", "--python", str(python), *args]
    return [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            *args]


def reason(done, what: str) -> str:
    """The last lines an installer printed, as the reason it failed."""
    if done is None:
        return f"{what} could not start or ran out of time"
    text = "\n".join(s for s in (done.stdout, done.stderr) if s).strip()
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    tail = "\n".join(lines[-REASON_LINES:])
    return f"{what} exited {done.returncode}" + (f":\n{tail}" if tail else "")


def transient(done) -> bool:
    """Whether a failed step (a ``launch.tool`` result) failed for a reason of the moment, not
    of the release: it ran out of time (or could not start: ``None``), something killed it
    (:data:`KILLS`), or the index could not be reached (:data:`NETWORK`). Such a failure is
    not remembered: the next call tries again."""
    if done is None:
        return True
    if done.returncode < 0:
        return -done.returncode in KILLS
    if done.returncode == 0:
        return False
    return NETWORK.search("\n".join(s for s in (done.stdout, done.stderr) if s)) is not None
