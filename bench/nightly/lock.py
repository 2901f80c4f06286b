"""One night at a time on a results folder: ``RESULTS/.nightly.lock``, held with ``flock`` by
whichever process runs the night, for the whole of it.

Two nights on one folder at once would measure on a busy machine, write one history from two
places, and the recipe's ``--environments`` would upgrade packages under the other night's
workers. So every ``jitbench nightly`` that writes to the folder (a night, its recipe's driver
across its pip upgrade and the night, ``--prepare``, ``--no-run`` judging, ``--accept``) takes
the lock before it does anything, and a second one refuses at once, naming the holder and
exiting :data:`LOCKED_EXIT`: nothing has run, so nothing measured is lost.

The shards of one night (``--shard K/N``) run at the same time on one shared folder, so they
hold the lock shared: together with each other, never with a whole night, a prepare or a
judging.

A holder that dies (killed, the machine rebooted) is no problem: the kernel releases a
``flock`` with the last descriptor of its open file, so there is no stale lock to clean up,
and the file is never deleted (deleting a lock file someone waits on would let two in).

The recipe's driver runs the night as a child ``jitbench nightly`` on the same folder. The
driver passes its locked descriptor down (:meth:`NightLock.child`), so the lock stays held
while either of them lives, and the child, finding the descriptor named in
:data:`HELD_ENV` open on this very file, holds the lock through it instead of refusing its
parent. A stale or copied variable names a descriptor that is closed or another file: it is
then ignored and the lock taken as usual.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from jitbench.errors import DataWarning

try:
    import fcntl
except ImportError:  # not POSIX: no flock, the nights are not locked
    fcntl = None

LOCK_NAME = ".nightly.lock"
# `jitbench nightly`'s exit when another night holds the results folder: not 2 (the command
# is right), not 1 or 3 (nothing was judged); a CI can retry later or skip the night
LOCKED_EXIT = 4
# "<descriptor>:<lock file>": the lock a parent night passed down to its child
HELD_ENV = "JITBENCH_NIGHT_LOCK_HELD"

# the locks this process holds, so a night that takes its folder's lock again (the recipe's
# driver: the command, then jitbench.nightly.environments.run) holds it once
_held: dict[str, NightLock] = {}


class NightLocked(Exception):
    """Another night holds the results folder; the message names it. Not a UserError: the
    command is right, and the CLI exits :data:`LOCKED_EXIT`, not 2."""

    def __init__(self, message: str, holder: dict | None):
        super().__init__(message)
        self.holder = holder


@dataclasses.dataclass
class NightLock:
    """A held lock: its file, the descriptor that holds it, and whether it is shared."""

    path: Path
    fd: int | None
    shared: bool
    depth: int = 1

    def child(self) -> tuple[dict[str, str], tuple[int, ...]]:
        """The environment variables and the descriptors to pass to a child night on the same
        folder so that it holds this lock instead of refusing it."""
        if self.fd is None:
            return {}, ()
        return {HELD_ENV: f"{self.fd}:{self.path}"}, (self.fd,)


def lock_path(results_root: Path | str) -> Path:
    return Path(results_root).absolute() / LOCK_NAME


@contextlib.contextmanager
def night_lock(results_root: Path | str, what: str, *, shared: bool = False,
               wait: float = 0.0, on_wait: Callable[[str], None] | None = None
               ) -> Iterator[NightLock]:
    """Hold ``RESULTS/.nightly.lock`` while the block runs (the folder is created where
    missing). ``what``: the command, recorded in the file with the pid, the host and the start
    so that a refused night can say who holds it. ``shared``: a shard's lock (module
    docstring). ``wait``: seconds to wait for the holder to finish before refusing
    (``on_wait`` is told once, with the holder); 0 refuses at once with :class:`NightLocked`."""
    path = lock_path(results_root)
    key = str(path)
    if key in _held:  # this process holds it already
        _held[key].depth += 1
        try:
            yield _held[key]
        finally:
            _held[key].depth -= 1
        return
    lock = _acquire(path, what, shared, wait, on_wait)
    _held[key] = lock
    try:
        yield lock
    finally:
        del _held[key]
        _release(lock)


def _acquire(path: Path, what: str, shared: bool, wait: float,
             on_wait: Callable[[str], None] | None) -> NightLock:
    if fcntl is None:
        return NightLock(path, None, shared)
    inherited = _inherited(path, shared)
    if inherited is not None:
        return inherited
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a file where the folder should be, a read-only mount
        from jitbench.errors import UserError

        raise UserError(f"--results {str(path.parent)!r} cannot hold a night: "
                        f"{exc.strerror or exc}") from None
    deadline, told = time.monotonic() + max(wait, 0.0), False
    while True:
        try:
            holder = _take(fd, shared)
        except OSError as exc:  # a file system without flock: run, but say it is unlocked
            os.close(fd)
            warnings.warn(f"{path.parent} cannot be locked ({exc.strerror}): nothing stops "
                          f"a second night on it", DataWarning, stacklevel=4)
            return NightLock(path, None, shared)
        if holder is None:
            break
        if time.monotonic() >= deadline:
            os.close(fd)
            raise NightLocked(f"another night holds {path.parent}: {describe(holder)}; one "
                              f"night at a time per results folder, so nothing was run (exit "
                              f"{LOCKED_EXIT}; --wait-lock S waits for it to end)", holder)
        if on_wait is not None and not told:
            on_wait(describe(holder))
            told = True
        time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))
    if not shared:  # a shard leaves the record alone: its siblings hold the lock with it
        record = {"pid": os.getpid(), "host": socket.gethostname(), "command": what,
                  "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
    return NightLock(path, fd, shared)


def _inherited(path: Path, shared: bool) -> NightLock | None:
    """The lock a parent night passed down (:data:`HELD_ENV`), held through its descriptor;
    None when there is none, or the variable names no open descriptor of this file."""
    said = os.environ.get(HELD_ENV, "")
    fd_text, _, named = said.partition(":")
    if not fd_text.isdigit() or named != str(path):
        return None
    fd = int(fd_text)
    try:
        if not os.path.samestat(os.fstat(fd), os.stat(path)):
            return None
        # the descriptor shares the parent's open file, so this holds (or keeps) its lock
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        return None
    return NightLock(path, None, shared)  # not ours to release: the parent releases it


def _release(lock: NightLock) -> None:
    if lock.fd is None:
        return
    try:
        if not lock.shared:  # no record of a night that has ended
            os.ftruncate(lock.fd, 0)
        fcntl.flock(lock.fd, fcntl.LOCK_UN)
    finally:
        os.close(lock.fd)


def _take(fd: int, shared: bool) -> dict | None:
    """Take the lock without blocking: None when it is ours now, else who holds it (as the
    holder recorded it; ``{"shards": True}`` for the shards of a night, which hold it shared
    and record nothing)."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        pass
    if not shared:
        try:  # granted shared: only shards hold it (or nobody, since a moment ago)
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _record(fd) or {}
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            fcntl.flock(fd, fcntl.LOCK_UN)  # a conversion that failed may hold nothing, or SH
            return {"shards": True}
    return _record(fd) or {}


def _record(fd: int) -> dict | None:
    """What the holder of the lock recorded; waits up to a second for one that has just taken
    it to write its record."""
    for _ in range(10):
        text = os.pread(fd, 65536, 0).decode(errors="replace").strip()
        if text:
            try:
                return json.loads(text)
            except ValueError:
                return None
        time.sleep(0.1)
    return None


def describe(holder: dict | None) -> str:
    """One phrase naming a holder, from what it recorded."""
    if not holder:
        return "a night that has not recorded itself yet"
    if holder.get("shards"):
        return "the shards of a night (jitbench nightly --shard), holding it together"
    return (f"pid {holder.get('pid')} on {holder.get('host')} since "
            f"{holder.get('started_at')}: {holder.get('command')}")


def holder(results_root: Path | str) -> str | None:
    """Who holds the results folder now, in words, or None (``jitbench nightly --status``):
    asked with a shared lock taken and dropped at once, so that it never keeps a night out for
    longer than that."""
    path = lock_path(results_root)
    if fcntl is None or not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return describe(_record(fd))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
