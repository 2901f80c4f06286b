"""The ladder: the same cases in each release's environment (or each setting of some
variables), every neighbouring pair measured by the A/B engine (``jitbench.run.ab_arms``:
pairs of fresh processes, A B B A ...), and per case, per step between neighbours, what moved:
steady time per mode, the JIT speedup over the nearest JIT-off mode, the first call, the
compile count, the compiled program (HLO fingerprint) and the error against float64 (each
step read back: ``jitbench.releases.step``).

Why a run of the A/B engine per neighbouring pair, not all releases in one run of k arms: the
engine, its record and its resume know two arms; a step's verdict is an A/B's own (its pairs,
its looks, its stopping), so a ladder of k releases is k - 1 A/B runs, each a run folder of its
own that `jitbench report` and `jitbench ab --resume` read as any A/B. The cost: a release in
the middle is measured twice (beside each neighbour).

``releases.json`` (``jitbench.releases.record``) holds it all for machines, written as the
ladder begins and after every A/B, so a ladder that is stopped names what it has; run again in
its folder (``resume=True``: ``jitbench releases --resume``) it reuses every A/B that is
complete, continues the one it was in and measures the rest (``jitbench.releases.resume``).
The page (``jitbench.report.releases_page``) reads that file, so both say the same.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from jitbench.analysis import ab_verdicts
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.releases import bisect as halving
from jitbench.releases import resume as resuming
from jitbench.releases.record import write
from jitbench.releases.step import as_float, clean, summarise
from jitbench.run import ab_arms





@dataclasses.dataclass(frozen=True)
class Rung:
    """One arm of a ladder: a release's environment (``spec`` = ``python=PATH``) or a setting
    of variables in this one (``spec`` = ``NAME=VALUE ...``, ``jitbench ab``'s arm spec).
    ``error``: why it cannot be measured (its environment did not install or import); it is
    named and left out. ``facts``: what the environment says of itself (requirement, reused,
    versions)."""

    name: str
    spec: str
    error: str | None = None
    facts: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def rungs_from_envs(names: Sequence[str], envs: Sequence[Any]) -> list[Rung]:
    """A rung per release from ``jitbench.releases.envs.ReleaseEnv``-like objects
    (``requirement``, ``path``, ``python``, ``error``, ``reused``, ``versions``)."""
    import shlex

    out = []
    for name, env in zip(names, envs):
        facts = {"requirement": env.requirement, "path": str(env.path),
                 "python": str(env.python) if env.python else None, "reused": env.reused,
                 "versions": dict(env.versions or {})}
        error = env.error or (None if env.python else "no interpreter in its environment")
        out.append(Rung(name, shlex.join([f"python={env.python}"]) if env.python else "",
                        error, facts))
    return out


def rungs_from_specs(specs: Sequence[str]) -> list[Rung]:
    """A rung per ``--arm SPEC`` (variables in this environment, or another interpreter),
    named by its spec ('this environment' for ''); UserError for a bad spec (``jitbench ab``'s
    rules) or the same spec twice."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        arm = ab_arms.parse_arm("arm", spec)
        name = arm.spec or "this environment"
        if name in seen:
            raise UserError(f"--arm {spec!r} is given twice; each arm is a rung of its own")
        seen.add(name)
        out.append(Rung(name, arm.spec, None, {"describe": arm.describe()}))
    return out


class LazyRung:
    """A bisect's candidate: a release whose environment is built (``envs.ensure``) the first
    time the halving asks for it, so a bisect builds only the releases it measures. It reads
    as a :class:`Rung` once built (``spec``, ``error``, ``facts``). ``retry``: try again a
    release whose environment failed to build before (``envs.ensure``'s)."""

    def __init__(self, name: str, requirement: str, cache: Path | str | None = None,
                 log: Callable[[str], None] | None = None, retry: bool = False):
        self.name, self.requirement, self.cache, self.log = name, requirement, cache, log
        self.retry = retry
        self._rung: Rung | None = None

    @property
    def built(self) -> bool:
        return self._rung is not None

    def _get(self) -> Rung:
        if self._rung is None:
            from jitbench.releases import envs

            env = envs.ensure(self.requirement, self.cache, log=self.log,
                              retry=self.retry)
            self._rung = rungs_from_envs([self.name], [env])[0]
        return self._rung

    @property
    def spec(self) -> str:
        return self._get().spec

    @property
    def error(self) -> str | None:
        return self._get().error

    @property
    def facts(self) -> Mapping[str, Any]:
        return self._get().facts


@dataclasses.dataclass(frozen=True)
class Settings:
    """How each step is measured (``ab``: the A/B engine's settings; its ``time_limit`` is
    the whole ladder's, shared out between the steps still to run), and the ``threshold`` a
    ratio must pass to be a step."""

    ab: ab_arms.Settings = ab_arms.Settings()
    threshold: float = 0.10
    case_timeout: float = 1800.0


def ordered(releases: Sequence[str], flag: str = "release") -> list[str]:
    """The releases from oldest to newest (neighbours in a ladder are neighbours in version);
    UserError naming one that is not a version, or the same version twice."""
    from packaging.version import InvalidVersion, Version

    parsed = []
    for text in releases:
        try:
            parsed.append((Version(text), text))
        except InvalidVersion:
            raise UserError(f"{flag} {text!r} is not a version (e.g. 0.4.31; name the package "
                            f"once, before its releases)") from None
    seen: dict[Any, str] = {}
    for v, text in parsed:
        if v in seen:  # the same text twice: an A/A ladder, asked for the way it cannot be
            raise UserError(f"{flag} {text!r} is named twice" + (
                "; to measure a release against itself, name its environment's interpreter "
                "twice: --arm python=ENV/bin/python --arm python=ENV/bin/python3"
                if seen[v] == text else f" ({seen[v]!r} is the same version)"))
        seen[v] = text
    return [text for _, text in sorted(parsed)]


def slug(name: str) -> str:
    """A rung's name as part of a folder's name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:60] or "arm"


class Ladder:
    """The cases measured over the rungs, step by step, in ``folder`` (each step an A/B run
    folder in it, ``releases.json`` beside them). ``resume``: the ladder was begun before in
    this folder; what its A/B runs hold is reused or continued
    (``jitbench.releases.resume``)."""

    def __init__(self, cases: Sequence[Case], folder: Path, settings: Settings, *,
                 command: Sequence[str] | None = None,
                 on_progress: Callable[[Any], None] | None = None,
                 say: Callable[[str], None] | None = None, resume: bool = False):
        if not cases:
            raise UserError("no cases match these filters (see `jitbench list`)")
        self.cases, self.folder, self.settings = list(cases), Path(folder), settings
        self.on_progress, self.say = on_progress, say or (lambda line: None)
        self.resume = resume
        earlier = resuming.check_folder(self.folder, resume)
        # a continued ladder keeps the command that began it (it continues that one)
        self.command = list((earlier or {}).get("command") or command or sys.argv)
        cost = (earlier or {}).get("cost") or {}
        self.earlier_s = float(cost.get("wall_s") or 0.0)  # earlier sessions' time
        self.sessions = int(cost.get("sessions") or (1 if earlier else 0)) + 1
        self.began = time.monotonic()
        self.runs: list[dict[str, Any]] = []  # every A/B made, in order
        self._checkpoint: Callable[[], None] | None = None  # writes the record so far

    @contextlib.contextmanager
    def running(self, record: Callable[[str], dict[str, Any]]) -> Iterator[None]:
        """The ladder from its first record to its last: its folder locked (one process
        writes a ladder at a time), ``record(status)`` written as it begins (``running``),
        and, where it ends early, ``interrupted`` (a signal, Ctrl-C) or ``failed`` (an
        error) before the exception goes on. A signal between two A/B runs stops it as one
        inside an A/B does (``jitbench.run.signals``)."""
        from jitbench.results import run_folder
        from jitbench.run.signals import StopOnSignals

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot write the ladder's folder {self.folder}: "
                            f"{exc.strerror or exc}") from None
        with run_folder.lock(self.folder), StopOnSignals() as stopper:
            def checkpoint() -> None:
                with stopper.critical():  # a signal waits for the record to be whole
                    record("running")

            checkpoint()
            self._checkpoint = checkpoint
            try:
                yield
            except BaseException as exc:
                stopper.disarm()  # the last record is written whole
                record("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
                raise
            finally:
                self._checkpoint = None

    def left_s(self, comparisons_left: int) -> float | None:
        """This comparison's share of the time limit left (a continued ladder's: the limit
        again, for what is left to measure)."""
        limit = self.settings.ab.time_limit
        if limit is None:
            return None
        return max(1.0, (limit - (time.monotonic() - self.began)) / max(1, comparisons_left))

    def run_dir(self, index: int, before: str, after: str) -> Path:
        """The A/B folder of the ``index``-th comparison (from 0), between two rungs; in a
        continued ladder, the folder an earlier session gave the same two rungs whatever its
        number (a rung built on ``--retry`` renumbers the steps after it)."""
        name = f"{slug(before)}-vs-{slug(after)}"
        if self.resume:
            found = sorted(d for d in self.folder.glob(f"[0-9][0-9]-{name}") if d.is_dir())
            if found:
                return found[0]
        return self.folder / f"{index + 1:02d}-{name}"

    def measured_before(self, index: int, before: str, after: str) -> bool:
        """Whether the ``index``-th comparison's A/B is complete in the folder already (it
        costs nothing now)."""
        return self.resume and resuming.ab_state(self.run_dir(index, before, after)) == \
            resuming.COMPLETE

    def compare(self, before: Rung, after: Rung, comparisons_left: int = 1) -> dict[str, Any]:
        """An A/B of two rungs (a run folder under this ladder's folder): measured, or, in a
        continued ladder, reused as it is (complete) or continued (unfinished); its summary
        (``jitbench.releases.step.summarise``) with ``how`` it was had."""
        run_dir = self.run_dir(len(self.runs), before.name, after.name)
        arms = (ab_arms.parse_arm("a", before.spec), ab_arms.parse_arm("b", after.spec))
        state = resuming.ab_state(run_dir) if self.resume else None
        if state is not None:
            resuming.check_same(run_dir, [a.spec for a in arms], [before.name, after.name],
                                self.cases)
        if state == resuming.COMPLETE:
            how = "reused"
            self.say(f"{before.name} -> {after.name}: the A/B in {run_dir} is complete, "
                     f"reused")
        elif state == resuming.UNFINISHED:
            how = "resumed"
            self.say(f"{before.name} -> {after.name}: continuing the A/B in {run_dir}")
            ab_arms.resume_ab(run_dir, command=self.command, on_progress=self.on_progress)
        else:
            how = "measured"
            s = self.settings.ab
            ab = dataclasses.replace(s, time_limit=self.left_s(comparisons_left),
                                     min_pairs=max(s.min_pairs, min(ab_verdicts.MIN_PAIRS,
                                                                    s.max_pairs)))
            self.say(f"{before.name} -> {after.name}: A/B in {run_dir}")
            run_dir = ab_arms.run_ab(self.cases, self.folder, arms, ab,
                                     case_timeout=self.settings.case_timeout,
                                     run_id=run_dir.name, command=self.command,
                                     on_progress=self.on_progress)
        out = {**summarise(run_dir, before.name, after.name, self.settings.threshold),
               "how": how}
        self.runs.append(out)
        if self._checkpoint is not None:
            self._checkpoint()
        return out


def run_ladder(cases: Sequence[Case], rungs: Sequence[Rung], folder: Path | str,
               settings: Settings = Settings(), *, kind: str = "ladder",
               package: str | None = None, command: Sequence[str] | None = None,
               on_progress: Callable[[Any], None] | None = None,
               say: Callable[[str], None] | None = None, resume: bool = False
               ) -> dict[str, Any]:
    """Every neighbouring pair of the rungs that can be measured, an A/B each; the ladder's
    record (written to ``folder/releases.json`` as it begins and after each A/B, returned at
    the end). ``resume``: continue the ladder begun in ``folder`` (:class:`Ladder`)."""
    ok = _measurable(rungs)
    ladder = Ladder(cases, Path(folder), settings, command=command, on_progress=on_progress,
                    say=say, resume=resume)
    names = [r.name for r in ok]
    planned = list(zip(names, names[1:]))

    def record(status: str) -> dict[str, Any]:
        return write(ladder, rungs, planned, kind=kind, package=package, status=status,
                     planned=planned)

    with ladder.running(record):
        for i, (before, after) in enumerate(zip(ok, ok[1:])):
            left = sum(1 for j in range(i, len(planned))
                       if not ladder.measured_before(j, *planned[j]))
            ladder.compare(before, after, comparisons_left=left)
        return record("complete")


def run_bisect(cases: Sequence[Case], rungs: Sequence[Rung | LazyRung], folder: Path | str,
               good: str, bad: str, settings: Settings = Settings(), *,
               package: str | None = None, command: Sequence[str] | None = None,
               on_progress: Callable[[Any], None] | None = None,
               say: Callable[[str], None] | None = None, resume: bool = False
               ) -> dict[str, Any]:
    """The releases from ``good`` to ``bad`` halved for every step of the threshold in steady
    time (``jitbench.releases.bisect``), each comparison an A/B; a release whose environment
    fails is passed over (named); the record, as a ladder's plus ``bisect`` (written as it
    begins, after each comparison with the comparisons made so far, and at the end).
    ``resume``: continue the bisect begun in ``folder``; its reused comparisons lead the
    halving the same way."""
    by_name = {r.name: r for r in rungs}
    order = halving.span([r.name for r in rungs], good, bad)
    if not cases:
        raise UserError("no cases match these filters (see `jitbench list`)")
    for flag, name in (("--good", good), ("--bad", bad)):  # their environments built here
        if by_name[name].error:
            raise UserError(f"{flag} {name}: its environment cannot be measured "
                            f"({by_name[name].error})")
    ladder = Ladder(cases, Path(folder), settings, command=command, on_progress=on_progress,
                    say=say, resume=resume)
    planned = 2 * max(1, math.ceil(math.log2(max(2, len(order) - 1)))) + 1
    candidates = [by_name[n] for n in order]

    def record(status: str, leaves=(), bisect=None) -> dict[str, Any]:
        return write(ladder, candidates, list(leaves), kind="bisect", package=package,
                     bisect=bisect, status=status)

    def compare(a: str, b: str) -> halving.Comparison:
        out = ladder.compare(by_name[a], by_name[b], max(1, planned - len(ladder.runs)))
        return halving.Comparison(a, b, {c["case_id"]: _change(c) for c in out["cases"]},
                                  out["rounds"])

    with ladder.running(record):
        found = halving.bisect(order, compare, settings.threshold,
                               available=lambda name: not by_name[name].error)
        return record("complete", found.leaves, {
            "good": good, "bad": bad, "releases": list(found.releases),
            "measured": list(found.measured), "environments": len(found.measured),
            "comparisons": [[c.before, c.after] for c in found.comparisons],
            "pairs": found.rounds,
            "steps": [{"case_id": s.case_id, "before": s.before, "after": s.after,
                       "kind": s.kind, **clean(dataclasses.asdict(s.change))}
                      for s in found.steps]})


def _change(case: Mapping[str, Any]) -> halving.Change:
    """A case of a comparison as the bisect reads it: its steady time's verdict, or broken /
    mended."""
    t = case["time"]
    verdict = case["status"]["change"] or t["verdict"]
    return halving.Change(verdict, as_float(t["ratio"]), as_float(t["ci_low"]),
                          as_float(t["ci_high"]), int(t["pairs"] or 0))


def _measurable(rungs: Sequence[Rung], at_least: int = 2) -> list[Rung]:
    names = [r.name for r in rungs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"{', '.join(twice)} named more than once; each release is a rung once")
    ok = [r for r in rungs if not r.error]
    if len(ok) < at_least:
        failed = "; ".join(f"{r.name}: {r.error}" for r in rungs if r.error)
        raise UserError(f"{len(ok)} of {len(rungs)} environments can be measured; a ladder "
                        f"needs {at_least}" + (f" (failed: {failed})" if failed else ""))
    return ok


