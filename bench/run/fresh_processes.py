"""Rounds of fresh processes: the one loop behind every measurement that repeats a set of cases
in new processes until it knows enough: ``jitbench ab`` and a change night's A/B (a round: both
arms, one fresh process each, ``jitbench.run.ab_arms``), a night's further processes
(``jitbench.nightly.repeats``) and the re-measurement of its suspects
(``jitbench.nightly.night``).

A caller says what a round measures (``measure(index, cases)``, in fresh processes) and what is
still open before each round (``pending(index)``: the cases the next round must measure, empty
when everything is known); the loop runs rounds ``first, first + 1, ...`` until nothing is
pending, ``max_rounds`` are done, or the next round would pass the time limit (``time_limit``
seconds since the loop began, judged by the longest round so far, or by ``expected(cases)``
where the caller can tell; never before ``min_rounds`` rounds are done). What it did is a
:class:`Rounds`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence


@dataclasses.dataclass
class Rounds:
    """What a loop of rounds did: ``done`` rounds (the last one's index + 1, counting from
    ``first``), the seconds each took, and why it stopped (``stopped``: ``"decided"``,
    ``"max_rounds"`` or ``"time"``; then ``need_s`` and ``left_s`` say what the next round
    was expected to take and what was left)."""

    first: int
    done: int = 0
    spent_s: float = 0.0
    stopped: str = "decided"
    round_s: list[float] = dataclasses.field(default_factory=list)
    need_s: float | None = None
    left_s: float | None = None

    @property
    def count(self) -> int:
        return self.done - self.first


def run_process_rounds(measure: Callable[[int, Sequence[Any]], None],
               pending: Callable[[int], Sequence[Any]], *, max_rounds: int, first: int = 0,
               time_limit: float | None = None, min_rounds: int = 0,
               expected: Callable[[Sequence[Any]], float] | None = None,
               say: Callable[[str], None] | None = None) -> Rounds:
    """Rounds ``first``.. (module docstring). ``measure`` is called with the round's index and
    the cases ``pending`` gave for it."""
    out = Rounds(first, done=first)
    began = time.monotonic()
    index = first
    while index < max_rounds:
        todo = list(pending(index))
        if not todo:
            out.stopped = "decided"
            break
        if time_limit is not None and index >= max(min_rounds, first + (expected is None)):
            left = time_limit - (time.monotonic() - began)
            need = expected(todo) if expected else max(out.round_s, default=0.0)
            if need > left:
                out.stopped, out.need_s, out.left_s = "time", need, max(0.0, left)
                if say:
                    say(f"time limit: round {index + 1} would pass {time_limit:g} s")
                break
        t0 = time.monotonic()
        measure(index, todo)
        out.round_s.append(time.monotonic() - t0)
        index += 1
        out.done = index
    else:
        out.stopped = "max_rounds"
    out.spent_s = time.monotonic() - began
    return out
