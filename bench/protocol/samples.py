"""One timed sample, and what the protocol keeps of each mode (:class:`ModeResult`).

The phases that decide how many samples to take are ``jitbench.protocol.timing`` (fixed) and
``jitbench.protocol.sequential`` (until the verdict is known); both take samples here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

Counters = Callable[[], Mapping[str, float]]
# why the framework compiled since the last read (e.g. JAX's explained cache misses); read
# after every call or sample, so each reason lands on the mode that caused it
Notes = Callable[[], list[str]]
MAX_NOTES = 20  # per mode


@dataclasses.dataclass
class Timed:
    """One mode, ready to time: ``call()`` runs it on already placed inputs, ``sync(out)``
    blocks until ``out`` is computed on the device."""

    name: str
    call: Callable[[], Any]
    sync: Callable[[Any], None]
    # its calls may queue on the device before the first finishes (JAX everywhere, TF on a
    # GPU): then a sample is made long enough to hide the dispatch (Protocol.pipeline_time)
    pipelines: bool = True


@dataclasses.dataclass
class ModeResult:
    name: str
    output: Any = None
    error: BaseException | None = None
    error_phase: str = ""
    first_call_s: float | None = None
    early_calls_s: list[float] = dataclasses.field(default_factory=list)
    warmup_calls: int = 0
    warmup_s: float = 0.0
    settled: bool = False
    loops: int = 1
    overhead_s: float = 0.0
    # a call alone, synced, minus its share of calls back to back (the dispatch a loop hides);
    # None where not probed (Protocol.pipeline_time)
    pipeline_gap_s: float | None = None
    samples: list[float] = dataclasses.field(default_factory=list)  # seconds per call
    compiling_samples: list[float] = dataclasses.field(default_factory=list)
    counters_first: dict[str, float] = dataclasses.field(default_factory=dict)
    counters_warmup: dict[str, float] = dataclasses.field(default_factory=dict)
    counters_samples: dict[str, float] = dataclasses.field(default_factory=dict)
    # interference check: two blocks alone, in two rounds over the modes after the interleaved
    alone_samples: list[float] = dataclasses.field(default_factory=list)
    alone_again_samples: list[float] = dataclasses.field(default_factory=list)
    alone_error: str | None = None  # the check failed; the interleaved samples still stand
    # sequential stopping: this mode's verdict against each baseline it was paired with
    # (baseline -> {"verdict", "speedup", "ci_low", "ci_high", "blocks", "rounds", "s"})
    verdicts: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    # latency: each call alone, synced after it (jitbench.protocol.latency)
    synced_samples: list[float] = dataclasses.field(default_factory=list)
    synced_error: str | None = None
    synced_in_rounds: bool = False  # its synced calls were taken in rounds with the others
    first_notes: list[str] = dataclasses.field(default_factory=list)  # why the first call
    later_notes: list[str] = dataclasses.field(default_factory=list)  # ...and later ones

    def note(self, notes: Notes | None, first: bool = False) -> None:
        if notes is not None:
            kept = self.first_notes if first else self.later_notes
            kept.extend(notes()[:MAX_NOTES - len(kept)])

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def steady_state_compiles(self) -> bool:
        """True when the mode still compiled inside timed samples."""
        return bool(self.compiling_samples)


def counter_diff(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}


def counter_add(total: dict[str, float], delta: Mapping[str, float]) -> None:
    for k, v in delta.items():
        total[k] = total.get(k, 0) + v


def one_call(t: Timed, clock: Callable[[], float]) -> tuple[float, Any]:
    t0 = clock()
    out = t.call()
    t.sync(out)
    return clock() - t0, out


def take_sample(t: Timed, r: ModeResult, counters: Counters, clock: Callable[[], float],
                 into: list[float] | None = None, notes: Notes | None = None) -> float:
    """One sample of ``r.loops`` calls and a sync, kept in ``into`` (default ``r.samples``),
    or in ``r.compiling_samples`` when anything compiled during it."""
    before = dict(counters())
    t0 = clock()
    out = None
    for _ in range(r.loops):
        out = t.call()
    t.sync(out)
    elapsed = clock() - t0
    delta = counter_diff(counters(), before)
    counter_add(r.counters_samples, delta)
    r.note(notes)
    per_call = elapsed / r.loops
    if delta.get("compiles", 0) > 0:
        r.compiling_samples.append(per_call)
    else:
        (r.samples if into is None else into).append(per_call)
    return elapsed


def untimed_calls(t: Timed, r: ModeResult, counters: Counters, n: int,
             notes: Notes | None = None) -> None:
    """``n`` calls after a switch to ``t``: whatever the previous mode left running or evicted
    is paid here, outside any sample. Compiles are still counted."""
    for _ in range(n):
        before = dict(counters())
        t.sync(t.call())
        counter_add(r.counters_samples, counter_diff(counters(), before))
        r.note(notes)
