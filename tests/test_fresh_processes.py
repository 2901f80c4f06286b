"""The one loop of rounds of fresh processes (jitbench.run.fresh_processes): what it stops on,
tested with a fake clock; and that every repeated measurement goes through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitbench.run import fresh_processes as rounds_mod
from jitbench.run.fresh_processes import run_process_rounds

pytestmark = pytest.mark.unit


@pytest.fixture
def clock(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(rounds_mod.time, "monotonic", lambda: now[0])
    return now


def _measure(clock, seconds, log):
    def measure(index, todo):
        log.append((index, list(todo)))
        clock[0] += seconds

    return measure


def test_rounds_run_until_nothing_is_pending_or_the_most_rounds(clock):
    log = []
    done = run_process_rounds(_measure(clock, 1.0, log), lambda i: ["a"] if i < 3 else [],
                              max_rounds=10)
    assert [i for i, _ in log] == [0, 1, 2] and done.stopped == "decided"
    assert done.count == 3 and done.spent_s == 3.0 and done.round_s == [1.0] * 3
    log.clear()
    done = run_process_rounds(_measure(clock, 1.0, log), lambda i: ["a"], max_rounds=4,
                              first=2)
    assert [i for i, _ in log] == [2, 3] and done.stopped == "max_rounds" and done.count == 2


def test_the_time_limit_judges_the_next_round_by_the_longest_so_far(clock):
    log = []
    # rounds of 3 s under a 10 s limit: after three (9 s) a fourth would pass it
    done = run_process_rounds(_measure(clock, 3.0, log), lambda i: ["a"], max_rounds=10,
                              time_limit=10.0)
    assert done.count == 3 and done.stopped == "time"
    assert (done.need_s, done.left_s) == (3.0, 1.0)
    # never before min_rounds, and never before the first round
    log.clear()
    done = run_process_rounds(_measure(clock, 3.0, log), lambda i: ["a"], max_rounds=10,
                              time_limit=1.0, min_rounds=5)
    assert done.count == 5


def test_an_expected_cost_can_stop_even_the_first_round(clock):
    log = []
    done = run_process_rounds(_measure(clock, 1.0, log), lambda i: ["a", "b"], max_rounds=5,
                              first=2, time_limit=10.0, expected=lambda todo: 6.0 * len(todo))
    assert log == [] and done.stopped == "time" and done.done == 2 and done.need_s == 12.0


def test_every_repeated_measurement_in_fresh_processes_goes_through_the_one_loop():
    """jitbench ab and a change night's A/B, a night's further processes and the recheck of its
    suspects: each calls run_process_rounds, none keeps a loop of its own."""
    root = Path(rounds_mod.__file__).parents[1]
    for rel in ("run/ab_arms.py", "nightly/repeats.py", "nightly/recheck.py"):
        text = (root / rel).read_text()
        assert "run_process_rounds(" in text, rel
        assert "while pending" not in text and "for i in range(rounds)" not in text, rel
        assert "for j in range(2, top + 1)" not in text, rel
