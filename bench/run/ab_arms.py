"""``jitbench ab``: the same cases in two environments, in pairs of fresh processes.

An environment (the interpreter and its packages, ``XLA_FLAGS``, thread settings) is fixed when
a process starts, so two environments are compared only by starting fresh processes of each, in
turns: round 1 measures the pending groups in arm A's workers then arm B's, round 2 in B's then
A's (A B B A ...: a drift cancels), each round in new processes. Every row is written as it
arrives, labelled with its arm and round (``ab_arm``, ``ab_round``); after each round the
verdicts (``jitbench.analysis.ab_verdicts``) say which groups still need pairs, and the run
stops when every case is decided, after ``max_pairs`` rounds, or when the next round would pass
``time_limit`` (the rounds: ``jitbench.run.fresh_processes``, the loop every repeated
measurement in fresh processes shares).

How the two processes of a pair run (``Settings.pairing``, :data:`PAIRINGS`): one after the
other (``alternating``, the order swapped every pair), or at the same time, each pinned to a
core of its own, the cores swapped every pair (``duet``: both share the host's state of that
moment, so a drift of the host cancels within the pair; CPU cases on two cores or more).

An arm (:func:`parse_arm`) is a spec like ``"python=/venv/bin/python XLA_FLAGS=--xla_foo=1"``:
an interpreter (default: this one) and environment assignments; ``""`` is this environment.
Before anything is measured each arm's interpreter is probed (``jitbench.run.arm_probe``):
what it is, its relevant packages, the protocol settings its jitbench knows; one that cannot
run jitbench's worker is a UserError. An arm may run an older jitbench (a change night's arm A
keeps the last good night's): its workers are sent only the settings it knows, and the A/B
says which it measures with its own defaults for (:func:`dropped_fields`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from jitbench import launch
from jitbench.analysis import ab_verdicts
from jitbench.define.workload import Case, group_cases
from jitbench.errors import UserError
from jitbench.protocol.settings import RECORDED_SAMPLE_MIN_TIME, Protocol
from jitbench.run.fresh_processes import run_process_rounds
from jitbench.run.options import PAIRINGS, RunOptions, usable_cores
from jitbench.run.progress import Progress
from jitbench.run.session import Session

ARMS = ("a", "b")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# each process measures a group as `jitbench run` does (pipelined calls), but the process, not
# the sample, is the unit of an A/B: a short budget per group and more processes beat the
# reverse; no A/A control, no interference check. Its samples last 1 ms at least on a CPU
# (10 ms on a GPU), as the change-night corpus was recorded: both arms sample alike, so what a
# sample's sync adds to a time cancels in time B / A
PROTOCOL = Protocol(budget=0.3, aa_control="off", alone_samples=0, synced_time=0.05,
                    synced_min_rounds=3, sample_min_time=RECORDED_SAMPLE_MIN_TIME,
                    pipeline_time=None, min_block_time=None)
PROBE_TIMEOUT_S = 120.0
# What the parent runs in an arm's interpreter (``python -c PROBE FRAMEWORK...``): the probe of
# the jitbench installed there, as ``python -m jitbench.run.arm_probe`` runs it, then a line
# of its own with the fields of that jitbench's Protocol. It asks them itself, rather than
# through the arm's probe, since a released jitbench's probe cannot be taught to: the oldest
# jitbench an arm may run answers this as the newest does.
PROBE = """\
import dataclasses, json, runpy
try:
    runpy.run_module("jitbench.run.arm_probe", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    if exc.code:
        raise
try:
    import jitbench
    from jitbench.protocol.settings import Protocol
    print(json.dumps({"protocol_fields": [f.name for f in dataclasses.fields(Protocol)],
                      "jitbench": {"version": getattr(jitbench, "__version__", None),
                                   "path": list(jitbench.__path__)}}))
except Exception as exc:
    print(json.dumps({"protocol_error": f"{type(exc).__name__}: {exc}"}))
"""


@dataclasses.dataclass(frozen=True)
class Arm:
    """One side of an A/B: ``python`` (None: this interpreter) and environment assignments."""

    name: str
    python: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    # the protocol settings the arm's jitbench knows, once probed (:func:`probe_arms`): its
    # workers are sent these only (None: all of this jitbench's)
    protocol_fields: tuple[str, ...] | None = None

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def foreign(self) -> bool:
        """Another interpreter than this one."""
        return self.python is not None and \
            Path(self.python).absolute() != Path(sys.executable).absolute()

    def launch_env(self) -> dict[str, str | None]:
        """What its processes get on top of this one's environment: its assignments (None:
        the variable unset), and for another interpreter an empty PYTHONPATH unless the spec
        sets one (this environment's path must not lend it this environment's packages)."""
        env = self.env_dict
        if self.foreign:
            env.setdefault("PYTHONPATH", "")
        return env

    @property
    def spec(self) -> str:
        """The spec that gives this arm back (:func:`parse_arm`; ``-NAME``: unset)."""
        words = ([f"python={self.python}"] if self.python else []) + \
            [f"-{k}" if v is None else f"{k}={v}" for k, v in self.env]
        return " ".join(shlex.quote(w) for w in words)

    def describe(self) -> str:
        what = [f"python {self.python}"] if self.python else ["this interpreter"]
        return ", ".join(what + [f"{k} unset" if v is None else f"{k}={v}"
                                 for k, v in self.env]) or "this environment"


def parse_arm(name: str, spec: str) -> Arm:
    """``--a``/``--b``'s spec: shell words, each ``python=PATH`` (the interpreter), a path to an
    interpreter alone, or ``NAME=VALUE`` (an environment assignment; the value may hold ``=``).
    UserError naming the bad word and the valid forms."""
    try:
        words = shlex.split(spec or "")
    except ValueError as exc:
        raise UserError(f"--{name} {spec!r}: {exc} (quote a value with spaces)") from None
    python, env = None, {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq and word.startswith("-") and _NAME.match(word[1:]):  # -NAME: unset
            env[word[1:]] = None
            continue
        if not eq:
            key, value = "python", word
        if key == "python":
            if python is not None:
                raise UserError(f"--{name} {spec!r} names two interpreters")
            python = _interpreter(name, value)
        elif _NAME.match(key):
            env[key] = value
        else:
            raise UserError(f"--{name}: {word!r} is neither python=PATH nor NAME=VALUE "
                            f"(an environment variable's name: letters, digits, _)")
    return Arm(name, python, tuple(env.items()))


def _interpreter(arm: str, value: str) -> str:
    found = shutil.which(value) if "/" not in value else (value if Path(value).is_file()
                                                          else None)
    if not found:
        raise UserError(f"--{arm}: interpreter {value!r} does not exist (python=PATH names a "
                        f"Python, e.g. a virtual environment's bin/python)")
    return str(Path(found).absolute())


def probe(arm: Arm, frameworks: Sequence[str]) -> dict[str, Any]:
    """What the arm's interpreter is (``jitbench.run.arm_probe``, and the protocol settings
    its jitbench knows: :data:`PROBE`) in the arm's environment; UserError, one line, when it
    cannot run jitbench's worker, lacks a framework asked for, or runs a jitbench too old to
    say which protocol settings it knows."""
    import os

    python = arm.python or sys.executable
    env = {k: v for k, v in {**os.environ, **arm.launch_env()}.items() if v is not None}
    done = launch.tool([python, "-c", PROBE, *frameworks], PROBE_TIMEOUT_S, env=env)
    if done is None:
        raise UserError(f"--{arm.name}: {python} could not be started, or took more than "
                        f"{PROBE_TIMEOUT_S:g} s to import jitbench")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UserError(f"--{arm.name}: {python} cannot run jitbench's worker ({last}); "
                        f"install jitbench into it (pip install jitbench) or name another "
                        f"python")
    facts = _json_lines(done.stdout)
    if facts.get("missing_frameworks"):
        raise UserError(f"--{arm.name}: {python} has no {', '.join(facts['missing_frameworks'])}"
                        f" installed, which the selected cases need (leave them out with "
                        f"--framework)")
    if "protocol_fields" not in facts:
        why = facts.get("protocol_error") or "it printed no list of its protocol settings"
        raise UserError(f"--{arm.name}: {python}'s jitbench cannot say which protocol settings "
                        f"it knows ({why}), so its workers cannot be sent settings they read; "
                        f"install a newer jitbench into it or name another python")
    known = list(facts["protocol_fields"])
    return {"spec": arm.spec, "python": facts["python"], "python_version":
            facts["python_version"], "packages": facts["packages"], "env": arm.env_dict,
            "jitbench": facts.get("jitbench") or {}, "protocol_fields": known,
            "dropped_protocol_fields": PROTOCOL.as_message(known)[1]}


def _json_lines(stdout: str) -> dict[str, Any]:
    """The JSON objects the probe printed, one a line, merged (a library's own line between
    them is passed over)."""
    facts: dict[str, Any] = {}
    for line in stdout.splitlines():
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict):
            facts.update(found)
    return facts


def probe_arms(arms: Sequence[Arm], frameworks: Sequence[str]
               ) -> tuple[tuple[Arm, ...], dict[str, dict[str, Any]]]:
    """Each arm probed (:func:`probe`) and told the protocol settings its jitbench knows;
    what is recorded of each, by name (``protocol_fields``, the long list, left out)."""
    facts = {arm.name: probe(arm, frameworks) for arm in arms}
    told = tuple(dataclasses.replace(arm, protocol_fields=tuple(facts[arm.name].pop(
        "protocol_fields"))) for arm in arms)
    return told, facts


def dropped_fields(facts: dict[str, dict[str, Any]]) -> list[str]:
    """A sentence per arm whose jitbench does not know some of this one's protocol settings:
    its workers are not sent them and measure with their own defaults, which may differ from
    the other arm's (the page shows them as warnings beside :func:`differences`)."""
    out = []
    for name, arm in facts.items():
        if arm.get("dropped_protocol_fields"):
            version = (arm.get("jitbench") or {}).get("version")
            out.append(f"arm {name.upper()}'s jitbench{f' {version}' if version else ''} "
                       f"does not know protocol fields: "
                       f"{', '.join(arm['dropped_protocol_fields'])}; it measures with its own "
                       f"defaults for them")
    return out


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Everything the two arms differ in, beyond their environment assignments: a sentence
    each (the page shows them as warnings: a change in time may come from any of them)."""
    out = []
    pa, pb = a.get("packages") or {}, b.get("packages") or {}
    for name in sorted(set(pa) | set(pb)):
        if pa.get(name) != pb.get(name):
            out.append(f"{name}: {pa.get(name) or 'not installed'} in A, "
                       f"{pb.get(name) or 'not installed'} in B")
    if a.get("python_version") != b.get("python_version"):
        out.append(f"Python {a.get('python_version')} in A, {b.get('python_version')} in B")
    return out


@dataclasses.dataclass(frozen=True)
class Settings:
    max_pairs: int = 8  # rounds at most; a case still open then is unresolved
    tolerance: float = 0.05  # the "same" band
    confidence: float = 0.95
    time_limit: float | None = None  # seconds; no new round starts that would pass it
    min_pairs: int = 0  # ... unless fewer rounds than this are done
    # every group measured in max_pairs rounds whatever its verdicts (a corpus for replay)
    fixed: bool = False
    budget: float = PROTOCOL.budget  # seconds of interleaved sampling per group and process
    # how both arms' workers start (jitbench.run.options.PROCESS_PROFILES): "stable" pins them
    # to one core, where most of the scatter between fresh processes goes
    process_profile: str = "default"
    # where the verdict looks before its last (``jitbench.analysis.ab_verdicts.looks``)
    look_pairs: tuple[int, ...] = ab_verdicts.LOOK_PAIRS
    pairing: str = "alternating"  # a key of PAIRINGS

    def check(self) -> "Settings":
        if self.max_pairs < ab_verdicts.MIN_PAIRS:
            raise UserError(f"--max-pairs {self.max_pairs}: at least {ab_verdicts.MIN_PAIRS} "
                            f"pairs make an interval")
        if self.pairing not in PAIRINGS:
            raise UserError(f"--pairing {self.pairing!r}: not one of "
                            f"{', '.join(PAIRINGS)}")
        return self

    @property
    def protocol(self) -> Protocol:
        return dataclasses.replace(PROTOCOL, budget=self.budget)


def duet_cores(cases: Sequence[Case]) -> tuple[int, int]:
    """The two cores a duet pins its arms to; UserError naming why a duet cannot run: fewer
    than two cores, or a case off the CPU (two processes sharing one accelerator would not
    measure what one does alone; on a machine without a GPU its cases are skipped rows, and
    do not count)."""
    off = sorted({c.device for c in cases if c.device != "cpu"})
    if off:
        from jitbench.results.meta import gpus

        off = off if gpus() else []
    if off:
        raise UserError(f"--pairing duet measures CPU cases only (these run on "
                        f"{', '.join(off)}); use --pairing alternating")
    cores = usable_cores()
    if len(cores) < 2:
        raise UserError(f"--pairing duet needs two cores this process may use; it has "
                        f"{len(cores)} ({cores}); use --pairing alternating")
    return cores[0], cores[1]


def verdicts(rows: Sequence[dict[str, Any]], settings: Settings, final: bool):
    import pandas as pd

    return ab_verdicts.verdicts(pd.DataFrame(list(rows)), tolerance=settings.tolerance,
                                confidence=settings.confidence,
                                max_pairs=settings.max_pairs, final=final,
                                look_pairs=tuple(settings.look_pairs))


def run_ab(cases: Sequence[Case], out_root: Path | str, arms: tuple[Arm, Arm],
           settings: Settings = Settings(), *, case_timeout: float = 1800.0,
           run_id: str | None = None, command: Sequence[str] | None = None,
           on_progress: Callable[[Progress], None] | None = None,
           watch: set[str] | None = None) -> Path:
    """Measure ``cases`` in both arms (module docstring); return the run folder. ``watch``:
    the case ids whose verdicts decide whether a group needs more pairs (None: every case;
    the others of a group are measured beside them, as their neighbours)."""
    if not cases:
        raise UserError("no cases match these filters (see `jitbench list`)")
    settings = settings.check()
    cores = duet_cores(cases) if settings.pairing == "duet" else None
    frameworks = sorted({c.framework for c in cases})
    arms, facts = probe_arms(arms, frameworks)
    warnings = differences(facts["a"], facts["b"]) + dropped_fields(facts)
    meta = {"ab": {"arms": facts, "warnings": warnings, "settings": dataclasses.asdict(settings),
                   "rounds": 0, "counts": {}, **({"cores": list(cores)} if cores else {})}}
    with Session.create("ab", out_root, run_id, cases, _options(settings, case_timeout), meta,
                        command=command, on_progress=on_progress,
                        total=len(cases) * 2 * settings.max_pairs) as session:
        _rounds(session, list(cases), arms, settings, [], 0, watch)
    return session.run_dir


def _options(settings: Settings, case_timeout: float) -> RunOptions:
    """The workers' options: a duet's are pinned (the ``stable`` profile), each arm to its
    own core (:func:`_measure_duet`)."""
    profile = "stable" if settings.pairing == "duet" else settings.process_profile
    return RunOptions(protocol=settings.protocol, case_timeout=case_timeout,
                      process_profile=profile).check()


def resume_ab(run_dir: Path | str, *, command: Sequence[str] | None = None,
              on_progress: Callable[[Progress], None] | None = None) -> Path:
    """Continue an interrupted A/B with its own arms and settings: rounds after the last one
    begun (a round with one arm only is left unpaired)."""
    with Session.resume(run_dir, "ab", on_progress=on_progress) as (session, cases, recorded):
        ab = session.record.meta.get("ab")
        if not isinstance(ab, dict):
            raise UserError(f"{str(run_dir)!r} is not an A/B run: its meta.json has no "
                            f"arms and settings")
        settings = Settings(**{**ab["settings"], "look_pairs": tuple(
            ab["settings"].get("look_pairs") or ab_verdicts.LOOK_PAIRS)}).check()
        if settings.pairing == "duet":
            duet_cores(cases)
        arms, _ = probe_arms([parse_arm(name, ab["arms"][name]["spec"]) for name in ARMS],
                             sorted({c.framework for c in cases}))
        first = 1 + max((int(r["ab_round"]) for r in recorded if "ab_round" in r), default=-1)
        # an A/B's session counts rows of both arms in every round, not cases
        session.total, session.done = len(cases) * 2 * settings.max_pairs, len(recorded)
        session.restart(len(cases), command)
        _rounds(session, cases, arms, settings, list(recorded), first)
    return session.run_dir


def _rounds(session: Session, cases: list[Case], arms: tuple[Arm, Arm], settings: Settings,
            rows: list[dict[str, Any]], first: int, watch: set[str] | None = None) -> None:
    """Rounds ``first``, ``first + 1``, ... until every case is decided, ``max_pairs`` or the
    time limit; ``rows``: those written so far, and every row written here joins them."""
    record = session.record
    groups = group_cases(cases)
    watch = set() if settings.fixed else watch  # fixed: every group, every round

    def pending(rnd: int) -> list[list[Case]]:
        return _pending(groups, verdicts(rows, settings, final=False), rnd, watch,
                        settings.fixed)

    def measure(rnd: int, todo: list[list[Case]]) -> None:
        if settings.pairing == "duet":
            _measure_duet(session, arms, rnd, todo, rows, duet_cores(cases))
        else:
            for arm in (arms if rnd % 2 == 0 else arms[::-1]):
                _measure_arm(session, arm, rnd, todo, rows)
        record.set_ab(rounds=rnd + 1, counts=ab_verdicts.counts(
            verdicts(rows, settings, final=False)))

    def final(status: str) -> None:
        record.set_ab(counts=ab_verdicts.counts(verdicts(rows, settings, final=True)))

    with session.running(cleanup=final):
        run_process_rounds(measure, pending, max_rounds=settings.max_pairs, first=first,
                           time_limit=settings.time_limit, min_rounds=settings.min_pairs,
                           say=session.progress)


class _Stopped(Exception):
    """The other arm of a duet stopped (a signal, an error): this one ends, writing nothing
    more."""


@dataclasses.dataclass
class _Duet:
    """What the two arms of a duet round share: ``stopped``, set when one ends the round
    early (the other then ends with :class:`_Stopped`, its workers killed), and ``together``,
    where each arm's worker, started, waits for the other's before measuring a group, so the
    two measure it at the same time (a worker's start-up alone scatters by more than a
    group's samples last). Once the arms fall out of step (a failure, a retried group, a
    wait past :data:`MEET_TIMEOUT_S`) each goes on alone for the rest of the round."""

    stopped: threading.Event = dataclasses.field(default_factory=threading.Event)
    together: threading.Barrier = dataclasses.field(
        default_factory=lambda: threading.Barrier(2))

    def meet(self) -> None:
        try:
            self.together.wait(MEET_TIMEOUT_S)
        except threading.BrokenBarrierError:
            pass

    def stop(self) -> None:
        self.stopped.set()
        self.together.abort()


MEET_TIMEOUT_S = 120.0  # longer than any worker's start-up


def _measure_arm(session: Session, arm: Arm, rnd: int, pending: list[list[Case]],
                 rows: list[dict[str, Any]], core: int | None = None,
                 duet: _Duet | None = None) -> None:
    """The pending groups in fresh workers of ``arm`` (round ``rnd``), each row written as it
    comes and added to ``rows``; the workers are gone when it returns. In a duet: ``core``,
    the one its workers are pinned to, and what the two arms share (:class:`_Duet`)."""
    record, tag = session.record, (arm.name, rnd)

    def going_on() -> None:
        if duet is not None and duet.stopped.is_set():
            raise _Stopped()

    def on_row(row, retried) -> None:
        going_on()
        session.write(lambda: rows.append(record.write_row(row, retried, ab=tag)))

    def on_failure(case, exc, log, retried) -> None:
        going_on()
        if duet is not None:
            duet.together.abort()  # out of step from here on
        session.write(lambda: rows.append(record.write_failure(
            case, exc.status, str(exc), retried, ab=tag, **exc.row_fields(case.mode, log))))

    def on_group(g) -> None:
        going_on()
        session.progress(f"round {rnd + 1} arm {arm.name.upper()}: {g[0].workload}/"
                         f"{g[0].variant} {g[0].framework} {g[0].dtype} {g[0].size}")

    options = session.options if core is None else \
        dataclasses.replace(session.options, cpu_core=core)
    loop = session.loop(options=options, arm_env=arm.launch_env(),
                        python=arm.python if arm.foreign else None,
                        log_prefix=f"{arm.name}{rnd + 1}-", env_group_prefix=f"{arm.name}:")
    # its workers are sent the protocol settings its jitbench knows, no others
    loop.worker_options = {**loop.worker_options, "protocol_fields": arm.protocol_fields}
    try:
        loop.run(pending, on_row, on_failure, on_group=on_group,
                 ready=(lambda group: duet.meet()) if duet is not None else None)
        if duet is not None:
            duet.together.abort()  # this arm is done: the other meets no one any more
    finally:
        # alone, the arm takes every live worker along; in a duet only its own (the other
        # arm's are killed by the arm that stops the round)
        loop.close(kill=True, everyone=core is None)


def _measure_duet(session: Session, arms: tuple[Arm, Arm], rnd: int,
                  pending: list[list[Case]], rows: list[dict[str, Any]],
                  cores: tuple[int, int]) -> None:
    """Round ``rnd`` as a duet: both arms at once, A on ``cores[rnd % 2]`` and B on the other
    (swapped every pair), B's loop in a thread of its own, each group measured by both at the
    same time (:class:`_Duet`). A signal (handled in this, the main thread) or an error in
    either arm ends both: the other's workers killed, its thread joined, nothing more written,
    the round left with one arm or none (unpaired)."""
    a_core, b_core = cores if rnd % 2 == 0 else cores[::-1]
    duet, failed = _Duet(), []

    def arm_b() -> None:
        try:
            _measure_arm(session, arms[1], rnd, pending, rows, b_core, duet)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the main thread, which raises it
            failed.append(exc)
            duet.stop()

    other = threading.Thread(target=arm_b, name=f"jitbench-ab-{arms[1].name}", daemon=True)
    other.start()
    try:
        _measure_arm(session, arms[0], rnd, pending, rows, a_core, duet)
        while other.is_alive():  # a signal now: raised here, not after B's round
            other.join(0.2)
            session.stopper.check()
    except _Stopped:
        pass
    except BaseException:
        duet.stop()
        from jitbench.run.worker_parent import live_workers

        for worker in live_workers():
            worker.kill()
        raise
    finally:
        other.join()
    if failed:
        raise failed[0]


def _pending(groups: list[list[Case]], table, rounds_done: int,
             watch: set[str] | None = None, fixed: bool = False) -> list[list[Case]]:
    """The groups with a case (of ``watch``, where given) not yet decided in ``table``
    (:func:`verdicts`, not final), or not measured yet (``fixed``: every group). A case that
    no process of either arm measured ``ok`` in two rounds is not waited on (its rows say
    why)."""
    if fixed:
        return list(groups)
    seen = set(table["case_id"])
    waiting = set(table.loc[table["verdict"] == "open", "case_id"])
    if rounds_done >= 2:
        waiting -= set(table.loc[table["pairs"] == 0, "case_id"])
    return [g for g in groups
            if any(c.case_id in waiting or c.case_id not in seen for c in g
                   if watch is None or c.case_id in watch)]
