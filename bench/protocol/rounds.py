"""The one round loop of a group's timed phase, with the stopping rule plugged in.

Each round visits the live modes in the order ``Protocol.interleave`` gives (``random``
shuffles every round, ``abba`` reverses every other one); each turn makes ``switch_calls``
untimed calls when the loop moved from another mode (if the rule wants them), then a block of
up to ``block_samples`` samples (``sample`` schemes: one). The rule (:class:`Stopping`) says
when a block ends, when a mode is done, and after each round which modes go on: the fixed
protocol (:class:`FixedStop`, ``min_time`` of samples per mode) or sequential stopping
(``jitbench.protocol.sequential.SequentialStop``, until each pair's verdict is known). A mode
that raises is done, with its error and phase on its result.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from jitbench.protocol.samples import (Counters, ModeResult, Notes, Timed, take_sample,
                                       untimed_calls)

MORE, END_BLOCK, END_MODE = "more", "end block", "end mode"


class Stopping:
    """What a stopping rule decides; the loop (:func:`run_rounds`) does the rest. Every hook
    has a do-nothing default."""

    def begin(self, live: Sequence[Timed], clock: Callable[[], float]) -> None:
        """Before the first round."""

    def begin_turn(self, t: Timed, r: ModeResult) -> bool:
        """A turn of ``t`` begins; whether, after another mode, it starts with the untimed
        calls."""
        return True

    def block_start(self, clock: Callable[[], float]) -> float | None:
        """When a block began, where the rule needs it (it reads the clock)."""
        return None

    def after_sample(self, t: Timed, r: ModeResult, k: int, sample_s: float,
                     began: float | None, clock: Callable[[], float]) -> str:
        """After the ``k``-th sample of a block: :data:`MORE`, :data:`END_BLOCK` or
        :data:`END_MODE`."""
        return MORE

    def after_block(self, t: Timed, r: ModeResult, n0: int, c0: int) -> None:
        """After a block (``r.samples[n0:]``, ``r.compiling_samples[c0:]`` are its own)."""

    def failed(self, t: Timed) -> None:
        """``t`` raised and is done."""

    def after_round(self, rounds: int, live: list[Timed],
                    clock: Callable[[], float]) -> tuple[list[Timed], bool]:
        """The modes that go on, and whether the group stops now."""
        return live, False

    def finish(self, rounds: int, clock: Callable[[], float]) -> None:
        """After the last round."""


class FixedStop(Stopping):
    """The fixed protocol: a mode is done once it has ``min_time`` of valid samples and
    ``min_samples`` of them, ``max_samples`` in all, ``min_samples`` that all compiled (its
    steady state is compiling), or ``max_time`` of sampling with at least a few."""

    def __init__(self, p, results: dict[str, ModeResult]):
        self.p = p
        self.spent = {name: 0.0 for name in results}

    def after_sample(self, t, r, k, sample_s, began, clock) -> str:
        self.spent[t.name] += sample_s
        return END_MODE if done(r, self.p, self.spent[t.name]) else MORE


def done(r: ModeResult, p, spent: float) -> bool:
    """Whether a mode has sampled enough under the fixed protocol (see :class:`FixedStop`)."""
    valid_time = sum(r.samples) * r.loops
    n_all = len(r.samples) + len(r.compiling_samples)
    return ((valid_time >= p.min_time and len(r.samples) >= p.min_samples)
            or n_all >= p.max_samples
            # its steady state *is* compilation: more samples will not change that
            or len(r.compiling_samples) >= p.min_samples
            or (spent >= p.max_time and n_all >= min(3, p.min_samples)))


def run_rounds(modes: list[Timed], results: dict[str, ModeResult], p, stop: Stopping,
               counters: Counters, clock: Callable[[], float],
               notes: Notes | None = None) -> None:
    """Phase 5: rounds of turns of the live modes until ``stop`` ends them (module docstring)."""
    live = [t for t in modes if results[t.name].ok]
    per_turn = p.block_samples if p.interleave in ("block", "abba") else 1
    rng = random.Random(p.seed)
    last = live[-1].name if live else None  # the warm-up of the last mode ran just before
    rounds = 0
    stop.begin(live, clock)
    while live:
        order = list(live)
        if p.interleave == "random":
            rng.shuffle(order)
        elif p.interleave == "abba" and rounds % 2:
            order.reverse()
        rounds += 1
        for t in order:
            r = results[t.name]
            try:
                wants_switch = stop.begin_turn(t, r)
                if t.name != last and wants_switch:
                    untimed_calls(t, r, counters, p.switches, notes)
                last = t.name
                n0, c0, began = len(r.samples), len(r.compiling_samples), stop.block_start(clock)
                for k in range(per_turn):
                    what = stop.after_sample(t, r, k, take_sample(t, r, counters, clock,
                                                                  notes=notes), began, clock)
                    if what == END_MODE:
                        live.remove(t)
                    if what != MORE:
                        break
                stop.after_block(t, r, n0, c0)
            except Exception as exc:
                r.error, r.error_phase = exc, "timed_samples"
                if t in live:
                    live.remove(t)
                stop.failed(t)
        live, finished = stop.after_round(rounds, live, clock)
        if finished:
            break
    stop.finish(rounds, clock)
