"""Which release stepped: halving a range of releases between a good and a bad one, without
assuming a single step.

A comparison of two releases (:class:`Comparison`) says, per case, time after / time before
with its interval and the A/B's four-outcome verdict (``jitbench.analysis.ab_verdicts``). A
case *differs* across a comparison (:func:`differs`) when the verdict is ``slower`` or
``faster`` and the ratio's point estimate lies beyond the threshold (``1 + threshold`` or its
inverse), when it broke or was mended (a case ``ok`` on one side only), or when the verdict is
undecided, the point estimate lies beyond the threshold and the interval excludes 1 (a change is
evident, its size not: halved further, and named ``undecided`` if it reaches neighbours so).
An undecided case whose interval holds 1 as well is not halved on: on a busy host a few pairs'
intervals are wide, some case's estimate lies beyond the threshold in nearly every range, and
halving on those made the search measure every release and more pairs than a full ladder
(``docs/lab/release-regressions``); where the search stops in a range (its ends and midpoint
differ in nothing else), such a case is named ``undecided`` over that range.

The search (:func:`bisect`): compare the endpoints; for every range of more than two releases
whose endpoints differ in any case, or whose midpoint differs from either endpoint, compare the
midpoint with both and search both halves; a range of two neighbouring releases is a leaf and
names a step for every case that differs there. So a range holding a slowdown and its
recovery, whose endpoints agree, is still searched as soon as its midpoint sits inside the
slow stretch; a flat range costs one midpoint. What it cannot see: a step and its recovery
both inside one half whose endpoints and midpoint all agree (a full ladder sees it).

Pure: the comparisons come from a function (``compare(before, after)``); the CLI's measures
an A/B of the two releases' environments (``jitbench.releases.ladder``), the tests' read
recorded figures (:func:`from_samples`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Sequence

from jitbench.errors import UserError

STEPS = ("slower", "faster")  # decided changes of time
BROKE, MENDED = "broke", "mended"  # ok before and not after, and the reverse
UNDECIDED = ("unresolved", "open")


@dataclasses.dataclass(frozen=True)
class Change:
    """One case between two releases: ``ratio`` = time after / time before (the A/B's B / A)
    with its interval, ``verdict`` one of the A/B's (``slower``, ``faster``, ``same``,
    ``unresolved``, ``failed``, ``skipped``) or :data:`BROKE` / :data:`MENDED`, ``pairs`` the
    process pairs behind it."""

    verdict: str
    ratio: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    pairs: int = 0


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Two releases side by side: per case id its :class:`Change`; ``rounds``: the rounds of
    fresh processes it took (a pair of processes each)."""

    before: str
    after: str
    changes: Mapping[str, Change]
    rounds: int = 0


def beyond(ratio: float, threshold: float) -> bool:
    """The ratio lies at or beyond a step of ``threshold`` either way (1.10 and 1/1.10 for
    0.10)."""
    return ratio == ratio and ratio > 0 and abs(math.log(ratio)) >= math.log1p(threshold) - 1e-12


def differs(change: Change, threshold: float) -> bool:
    """Whether a case differs across a comparison (module docstring): a decided step beyond
    the threshold, a case broken or mended, or an undecided one whose estimate lies beyond
    it and whose interval excludes 1."""
    if change.verdict in (BROKE, MENDED):
        return True
    if change.verdict in UNDECIDED:
        return unsure(change, threshold) and (change.ci_low > 1 or change.ci_high < 1)
    return change.verdict in STEPS and beyond(change.ratio, threshold)


def unsure(change: Change, threshold: float) -> bool:
    """An undecided case (the pairs ran out) whose estimate lies beyond the threshold."""
    return change.verdict in UNDECIDED and beyond(change.ratio, threshold)


def kind(change: Change) -> str:
    """What a leaf names a differing case: ``step`` (decided, or broken / mended) or
    ``undecided`` (the pairs ran out before the verdict)."""
    return "undecided" if change.verdict in UNDECIDED else "step"


@dataclasses.dataclass(frozen=True)
class Step:
    """A case that differs between two neighbouring releases; or, ``undecided``, one whose
    pairs ran out with its estimate beyond the threshold in a range the search stopped in
    (:func:`bisect`)."""

    case_id: str
    before: str
    after: str
    change: Change

    @property
    def kind(self) -> str:
        return kind(self.change)


@dataclasses.dataclass(frozen=True)
class Bisection:
    """What a bisect found: ``steps`` between neighbouring releases (in release order, then
    case), the releases it measured (in order), the comparisons it made (in the order made),
    the ``leaves``: the comparisons between neighbours (releases that cannot be measured
    left out) where it stopped halving."""

    releases: tuple[str, ...]
    measured: tuple[str, ...]
    comparisons: tuple[Comparison, ...]
    steps: tuple[Step, ...]
    leaves: tuple[tuple[str, str], ...] = ()

    @property
    def rounds(self) -> int:
        """Rounds of fresh processes over every comparison: a pair of processes each."""
        return sum(c.rounds for c in self.comparisons)


def span(candidates: Sequence[str], good: str, bad: str) -> list[str]:
    """The releases from ``good`` to ``bad`` in the candidates' order (either may come first);
    UserError naming a release that is not a candidate, or the same release twice."""
    names = list(candidates)
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise UserError(f"--candidates names {', '.join(twice)} more than once")
    for flag, name in (("--good", good), ("--bad", bad)):
        if name not in names:
            raise UserError(f"{flag} {name!r} is not among the releases measured "
                            f"({', '.join(names) or 'none'})")
    if good == bad:
        raise UserError(f"--good and --bad are both {good!r}: nothing lies between")
    i, j = sorted((names.index(good), names.index(bad)))
    return names[i:j + 1]


def bisect(releases: Sequence[str], compare: Callable[[str, str], Comparison],
           threshold: float, available: Callable[[str], bool] | None = None) -> Bisection:
    """Search ``releases`` (in order, good and bad at the ends) for every step of
    ``threshold`` (module docstring); ``compare(before, after)`` is called once per pair of
    releases at most. ``available(release)``: whether it can be measured (its environment
    built); one that cannot is passed over, the release nearest the middle taken instead, and
    a step between two releases with only such releases between them is named between
    those two."""
    order = list(releases)
    if len(order) < 2:
        raise UserError(f"a bisect needs two releases at least, got {len(order)}")
    made: dict[tuple[int, int], Comparison] = {}

    def cmp(i: int, j: int) -> Comparison:
        if (i, j) not in made:
            made[(i, j)] = compare(order[i], order[j])
        return made[(i, j)]

    def any_differs(i: int, j: int) -> bool:
        return any(differs(c, threshold) for c in cmp(i, j).changes.values())

    steps: list[Step] = []
    leaves: list[tuple[str, str]] = []
    usable = available or (lambda name: True)

    def middle(lo: int, hi: int) -> int | None:
        """The release nearest the middle of (lo, hi) that can be measured; None when none."""
        mid = (lo + hi) // 2
        for k in sorted(range(lo + 1, hi), key=lambda k: (abs(k - mid), k)):
            if usable(order[k]):
                return k
        return None

    def search(lo: int, hi: int) -> None:
        mid = middle(lo, hi)
        if mid is None:  # neighbours, or only releases that cannot be measured between
            leaves.append((order[lo], order[hi]))
            steps.extend(Step(case, order[lo], order[hi], c)
                         for case, c in sorted(cmp(lo, hi).changes.items())
                         if differs(c, threshold))
            return
        if any_differs(lo, hi) or any_differs(lo, mid) or any_differs(mid, hi):
            search(lo, mid)
            search(mid, hi)
        else:  # nothing to halve on; what the pairs could not tell is said over the range
            steps.extend(Step(case, order[lo], order[hi], c)
                         for case, c in sorted(cmp(lo, hi).changes.items())
                         if unsure(c, threshold))

    for end in (order[0], order[-1]):
        if not usable(end):
            raise UserError(f"{end} cannot be measured, so it cannot end a bisect")
    search(0, len(order) - 1)
    measured = sorted({k for pair in made for k in pair})
    return Bisection(tuple(order), tuple(order[k] for k in measured), tuple(made.values()),
                     tuple(steps), tuple(leaves))


def from_samples(figures: Mapping[str, Mapping[str, Sequence[float]]], *, tolerance: float,
                 confidence: float = 0.95) -> Callable[[str, str], Comparison]:
    """A ``compare`` over recorded figures: release -> case id -> each process's time, the
    i-th process of one release paired with the i-th of the other (an A/B's round), judged
    as ``jitbench.analysis.ab_verdicts`` judges a finished A/B of that many pairs."""
    from jitbench.analysis.ab_verdicts import decide_interval

    def compare(before: str, after: str) -> Comparison:
        changes, rounds = {}, 0
        for case in sorted(set(figures[before]) & set(figures[after])):
            a, b = figures[before][case], figures[after][case]
            units = [math.log(y / x) for x, y in zip(a, b)]
            rounds = max(rounds, len(units))
            verdict, _, ratio, lo, hi = decide_interval(
                units, tolerance=tolerance, confidence=confidence, max_pairs=len(units))
            changes[case] = Change(verdict or "unresolved", ratio, lo, hi, len(units))
        return Comparison(before, after, changes, rounds)

    return compare
