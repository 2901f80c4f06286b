"""The bisect's halving (``jitbench.releases.bisect``) on recorded figures: release -> case ->
each process's time, no process started. A single slowdown is placed between its neighbours;
a slowdown and its recovery inside a range whose endpoints agree are both found; an A/A range
calls no step; every pair of releases is measured once at most and fewer than a full ladder
needs when one step lies in a long range."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jitbench.errors import UserError
from jitbench.releases.bisect import (Change, Comparison, beyond, bisect, differs,
                                      from_samples, span)

pytestmark = pytest.mark.unit

RELEASES = ["0.4.30", "0.4.31", "0.4.33", "0.4.35", "0.4.38", "0.5.3", "0.6.2", "0.7.2",
            "0.8.3", "0.10.2"]


def figures(levels: dict[str, dict[str, float]], pairs: int = 8, noise: float = 0.02,
            seed: int = 0) -> dict[str, dict[str, list[float]]]:
    """Each release's times per case: its level times a process noise of ``noise`` (log sd)."""
    rng = np.random.default_rng(seed)
    return {r: {case: list(level * np.exp(rng.normal(0, noise, pairs)))
                for case, level in cases.items()} for r, cases in levels.items()}


def levels(step_at: dict[str, float], cases=("scan", "matmul")) -> dict[str, dict[str, float]]:
    """Per release, per case, a level: 1.0 for ``matmul``; ``scan`` multiplied by the factor
    of each release in ``step_at`` from that release on."""
    out, scan = {}, 1.0
    for r in RELEASES:
        scan *= step_at.get(r, 1.0)
        out[r] = {"scan": scan, "matmul": 1.0}
    return {r: {c: v for c, v in lv.items() if c in cases} for r, lv in out.items()}


def counted(compare):
    calls = []

    def wrapped(a, b):
        calls.append((a, b))
        return compare(a, b)

    return wrapped, calls


def test_one_slowdown_is_placed_between_its_neighbouring_releases():
    compare, calls = counted(from_samples(figures(levels({"0.4.33": 3.0})), tolerance=0.05))
    found = bisect(RELEASES, compare, threshold=0.10)
    assert [(s.case_id, s.before, s.after, s.kind) for s in found.steps] == [
        ("scan", "0.4.31", "0.4.33", "step")]
    step = found.steps[0].change
    assert step.verdict == "slower" and step.ci_low < 3.0 < step.ci_high and step.pairs == 8
    assert len(calls) == len(set(calls))  # each pair of releases once
    # halving: fewer releases measured than the ladder's ten
    assert len(found.measured) < len(RELEASES) and {"0.4.30", "0.10.2"} <= set(found.measured)
    assert found.rounds == 8 * len(calls)


def test_a_slowdown_and_its_recovery_between_agreeing_endpoints_are_both_found():
    # 0.4.33 makes scan 3x slower and 0.7.2 mends it: the endpoints agree
    compare, _ = counted(from_samples(figures(levels({"0.4.33": 3.0, "0.7.2": 1 / 3.0})),
                                      tolerance=0.05))
    found = bisect(RELEASES, compare, threshold=0.10)
    assert [(s.before, s.after, s.change.verdict) for s in found.steps] == [
        ("0.4.31", "0.4.33", "slower"), ("0.6.2", "0.7.2", "faster")]
    ends = found.comparisons[0]
    assert (ends.before, ends.after) == ("0.4.30", "0.10.2")
    assert not differs(ends.changes["scan"], 0.10)  # no step seen from the ends alone


def test_an_aa_range_calls_no_step_and_costs_one_midpoint():
    same = {r: {"scan": 1.0, "matmul": 1.0} for r in RELEASES}
    compare, calls = counted(from_samples(figures(same, noise=0.03, seed=4), tolerance=0.05))
    found = bisect(RELEASES, compare, threshold=0.10)
    assert found.steps == ()
    assert calls == [("0.4.30", "0.10.2"), ("0.4.30", "0.4.38"), ("0.4.38", "0.10.2")]


def test_a_step_below_the_threshold_is_not_a_step():
    compare = from_samples(figures(levels({"0.5.3": 1.04}), noise=0.002), tolerance=0.01)
    found = bisect(RELEASES, compare, threshold=0.10)
    assert found.steps == ()
    assert found.comparisons[0].changes["scan"].verdict == "slower"  # seen, but small


def test_a_case_that_breaks_is_a_step_and_an_undecided_one_is_named_so():
    def compare(a, b):
        broke = RELEASES.index(b) >= RELEASES.index("0.6.2") > RELEASES.index(a)
        wide = RELEASES.index(b) >= RELEASES.index("0.8.3") > RELEASES.index(a)
        return Comparison(a, b, {
            "aot": Change("broke" if broke else "same", 1.0, 0.98, 1.02, 4),
            "scan": Change("unresolved", 1.5, 1.02, 2.8, 3) if wide else
            Change("same", 1.0, 0.97, 1.03, 4)}, rounds=4)

    found = bisect(RELEASES, compare, threshold=0.10)
    assert [(s.case_id, s.before, s.after, s.kind) for s in found.steps] == [
        ("aot", "0.5.3", "0.6.2", "step"), ("scan", "0.7.2", "0.8.3", "undecided")]


def test_an_undecided_case_whose_interval_holds_one_is_not_halved_on_but_named_over_its_range():
    """A few pairs on a busy host: one case's estimate lies beyond the threshold in every
    comparison, its interval from 0.6 to 2.4. The search halves nothing on it (a flat range's
    three comparisons) and names it undecided over the range, not a step."""
    def compare(a, b):
        return Comparison(a, b, {"noisy": Change("unresolved", 1.2, 0.6, 2.4, 3),
                                 "quiet": Change("same", 1.0, 0.97, 1.03, 3)}, rounds=3)

    compare_, calls = counted(compare)
    found = bisect(RELEASES, compare_, threshold=0.10)
    assert len(calls) == 3
    assert [(s.case_id, s.before, s.after, s.kind) for s in found.steps] == [
        ("noisy", "0.4.30", "0.10.2", "undecided")]
    assert not differs(Change("unresolved", 1.2, 0.6, 2.4, 3), 0.10)
    assert differs(Change("unresolved", 1.2, 1.01, 2.4, 3), 0.10)
    assert not differs(Change("unresolved", 1.05, 1.01, 1.09, 3), 0.10)  # within the threshold


def test_span_takes_the_range_either_way_and_names_a_bad_release():
    assert span(RELEASES, "0.4.31", "0.4.35") == ["0.4.31", "0.4.33", "0.4.35"]
    assert span(RELEASES, "0.4.35", "0.4.31") == ["0.4.31", "0.4.33", "0.4.35"]
    with pytest.raises(UserError, match=r"--bad '0\.99' is not among .*0\.4\.30, 0\.4\.31"):
        span(RELEASES, "0.4.31", "0.99")
    with pytest.raises(UserError, match="both '0.4.31'"):
        span(RELEASES, "0.4.31", "0.4.31")
    with pytest.raises(UserError, match="0.4.31 more than once"):
        span(["0.4.31", "0.4.31", "0.5.0"], "0.4.31", "0.5.0")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 14), steps=st.dictionaries(st.integers(1, 13),
                                                   st.sampled_from([0.25, 0.5, 2.0, 4.0]),
                                                   max_size=3))
def test_every_step_found_lies_between_neighbours_and_no_pair_is_measured_twice(n, steps):
    """Exact figures (no noise): each step found is a real one, between neighbouring
    releases; a step whose neighbours' levels differ from both ends' is always found."""
    names = [f"r{i}" for i in range(n)]
    level, lv = 1.0, {}
    for i, name in enumerate(names):
        level *= steps.get(i, 1.0)
        lv[name] = level

    def compare(a, b):
        ratio = lv[b] / lv[a]
        verdict = "same" if ratio == 1 else "slower" if ratio > 1 else "faster"
        return Comparison(a, b, {"c": Change(verdict, ratio, ratio, ratio, 4)}, 4)

    wrapped, calls = counted(compare)
    found = bisect(names, wrapped, threshold=0.10)
    assert len(calls) == len(set(calls))
    for s in found.steps:
        assert names.index(s.after) == names.index(s.before) + 1
        assert lv[s.before] != lv[s.after]
    real = {(names[i - 1], names[i]) for i in steps if i < n and steps[i] != 1.0}
    assert {(s.before, s.after) for s in found.steps} <= real
    if lv[names[0]] != lv[names[-1]] and len(real) == 1:
        assert {(s.before, s.after) for s in found.steps} == real


def test_beyond_is_symmetric_in_log():
    assert beyond(1.10, 0.10) and beyond(1 / 1.10, 0.10)
    assert not beyond(1.09, 0.10) and not beyond(float("nan"), 0.10)
