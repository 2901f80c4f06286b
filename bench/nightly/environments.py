"""``jitbench nightly --environments DIR --requirements FILE``: the nightly's two environments
in turn, so that a night whose packages changed can measure the last good night's packages
beside tonight's (``jitbench.nightly.change``).

``DIR`` holds two virtual environments, ``DIR/a`` and ``DIR/b`` (created with ``python -m
venv`` where missing). Which of them ran the last good night is read from the history itself
(the night's recorded interpreter). Each night the other one is upgraded from ``FILE``
(``pip install --upgrade -r FILE``: the requirements name jitbench itself, installed as a
package, not editable, so the last good environment keeps the jitbench and the workloads it
measured with), the night runs in it
(``DIR/X/bin/python -m jitbench nightly`` with the rest of the command line), and the last good
one is left as it was. A regressed or undecided night leaves the last good environment where
it was, so the next night upgrades the same one again; an accepted night
(``jitbench nightly --accept``) becomes the last good one.

A night split over machines runs in three steps, each a command: ``--prepare`` upgrades
tonight's environment once; each shard (``--shard K/N --run-id NIGHT``, no
``--requirements``) measures its groups in it; ``jitbench merge`` and ``--no-run`` judge the
night in the environment it ran in.

The environments, the results and the reports are state that every night of one history must
share: one machine, or one shared folder for every runner and the merge job, and never two
nights at once (docs/nightly.md, "A recipe to copy"). The driver holds the results folder's
lock (``jitbench.nightly.lock``) across the upgrade and the night, and passes it down to the
night it runs; the signals it gets reach pip and the night, and it waits for their clean stop.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

from jitbench import launch
from jitbench.errors import Interrupted, UserError
from jitbench.results.files import load_meta

ENVIRONMENTS = ("a", "b")


def python_of(env_dir: Path) -> Path:
    return env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def last_good_environment(root: Path, results: Path) -> str | None:
    """Which of the two environments ran the history's last good night: the night the judge
    will measure tonight against (``jitbench.nightly.state.last_good``, one function of one
    history for both), so the recipe never upgrades the environment that really was last
    good."""
    from jitbench.nightly import state

    if not Path(results).is_dir():
        return None
    good, _ = state.last_good(results, state.history_order(results), tonight="")
    if good is None:
        return None
    return _which(root, (load_meta(Path(results) / good).get("machine") or {})
                  .get("executable"))


def tonight(root: Path, results: Path) -> str:
    """The environment tonight runs in: the one that did not run the last good night."""
    return "b" if last_good_environment(root, results) == "a" else "a"


def _which(root: Path, python: str | None) -> str | None:
    """Which of the two environments an interpreter path belongs to."""
    if not python:
        return None
    for name in ENVIRONMENTS:
        env_dir = (root / name).absolute()
        if Path(python).absolute().is_relative_to(env_dir):
            return name
    return None


def latest_environment(root: Path, results: Path) -> str | None:
    """Which of the two environments ran the history's latest night (what a ``--no-run``
    analysis of it runs in: a merged night of shards, before it has a summary)."""
    from jitbench.nightly.runs import run_dirs

    nights = run_dirs(results) if Path(results).is_dir() else []
    return _which(root, (load_meta(nights[-1]).get("machine") or {}).get("executable")) \
        if nights else None


def run(root: Path | str, requirements: Path | str | None, night_args: Sequence[str],
        results: Path | str, *, prepare_only: bool = False) -> int:
    """One night in the environment :func:`tonight` (module docstring), upgraded first from
    ``requirements`` where given (a sharded night upgrades once, ``prepare_only``, before its
    shards run without it); its exit code. With ``--no-run`` among ``night_args`` (the
    analysis of a merged night) it runs in the environment the latest night ran in."""
    from jitbench.nightly.lock import night_lock

    words = list(night_args)
    shard = any(w == "--shard" or w.startswith("--shard=") for w in words)
    with night_lock(results, " ".join(["jitbench nightly --environments", str(root), *words]),
                    shared=shard) as lock:
        return _run(Path(root).absolute(), requirements, words, Path(results), lock,
                    prepare_only=prepare_only)


def _run(root: Path, requirements: Path | str | None, night_args: list[str], results: Path,
         lock, *, prepare_only: bool) -> int:
    """:func:`run` with the results folder locked (``lock``, passed down to the night so that
    it holds it too): Ctrl-C, SIGTERM and SIGHUP reach pip and the night through
    ``launch.forward``, which waits for their own clean stop."""
    if requirements is not None and not Path(requirements).is_file():
        raise UserError(f"--requirements {str(requirements)!r} does not exist (a pip "
                        f"requirements file naming jitbench and what it should measure with)")
    root.mkdir(parents=True, exist_ok=True)
    good = last_good_environment(root, results)
    name = (latest_environment(root, results) if "--no-run" in night_args else None) \
        or tonight(root, results)
    env_dir = root / name
    python = python_of(env_dir)
    if requirements is None and not python.is_file():
        raise UserError(f"{str(env_dir)!r} holds no environment yet: prepare tonight's first "
                        f"(jitbench nightly --environments {root} --requirements FILE "
                        f"--prepare)")
    if not python.is_file():
        print(f"jitbench: creating the environment {env_dir}", flush=True)
        if launch.foreground([sys.executable, "-m", "venv", str(env_dir)]) != 0:
            raise UserError(f"could not create a virtual environment in {str(env_dir)!r}")
    if requirements is not None:
        pip = [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "-r",
               str(Path(requirements).absolute())]
        stopped: list[int] = []
        if launch.forward(pip, forwarded=stopped) != 0:
            if stopped:
                raise Interrupted(stopped[0])
            raise UserError(f"pip could not install {str(requirements)!r} into "
                            f"{str(env_dir)!r} (its message is above); nothing was measured, "
                            f"the last good environment is as it was")
    print(f"jitbench: tonight in {env_dir}"
          + (f", upgraded from {requirements}" if requirements is not None else "")
          + (f"; {root / good} ran the last good night and is left as it was" if good else ""),
          flush=True)
    if prepare_only:
        return 0
    passed, fds = lock.child()
    return launch.forward([str(python), "-m", "jitbench", "nightly", *night_args],
                          env={**os.environ, **passed}, pass_fds=fds)
