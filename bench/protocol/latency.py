"""Latency beside throughput: each call alone, the device synced after it.

The timed samples (``jitbench.protocol.timing``) batch short calls so they pipeline, one sync per
sample: a *throughput* time per call, what a loop that never waits for a result pays. A server
answering one request, or a training loop reading its loss every step, waits for each call:
its *synced* time includes the dispatch the device can no longer hide (nvbench's "cold" time,
without the cache flush). The two differ most where a call is short and its dispatch long:
JIT saves host time there, and the pipelined ratio overstates what a synced caller gains.

A mode whose samples are one call each (``loops`` 1: a call of a millisecond or more) was
already timed that way: each sample is one call with the sync after it, so its samples are its
synced calls. After a group's interleaved sampling, :func:`run_synced` calls every mode that
batched its calls (``loops`` > 1) once per round, in turn, each call timed with its sync: the
rounds pair those modes in time (``ModeResult.synced_in_rounds``). It stops after
``Protocol.synced_time`` seconds, never before ``synced_min_rounds`` rounds. The row's fields
and the synced speedup's interval are the row builder's (``jitbench.results.row``).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from jitbench.protocol.samples import ModeResult, Notes, Timed


def run_synced(modes: Sequence[Timed], results: Mapping[str, ModeResult], time_limit: float,
               min_rounds: int, max_rounds: int,
               clock: Callable[[], float], notes: Notes | None = None) -> None:
    """Rounds over the modes with samples (compiling ones too), one synced call each, into
    ``ModeResult.synced_samples``; one untimed synced call each first (the switch from the
    pipelined phase). A mode that raises here keeps its other results (``synced_error``).
    ``notes``: the framework's reasons for compiling, drained after each call into the mode
    that caused them (a mode recompiling every call must not lend its reasons to the next)."""
    live = []
    for t in modes:
        r = results.get(t.name)
        if r is None or not r.ok or not (r.samples or r.compiling_samples) or time_limit <= 0:
            continue
        if r.loops <= 1:  # its samples are single synced calls already
            r.synced_samples = list(r.samples or r.compiling_samples)
        else:
            r.synced_in_rounds = True
            live.append(t)
    if not live:
        return
    for t in list(live):
        try:
            t.sync(t.call())
        except Exception as exc:  # noqa: BLE001 -- extra information, never a failure
            results[t.name].synced_error = f"{type(exc).__name__}: {exc}"[:500]
            live.remove(t)
        results[t.name].note(notes)
    start = clock()
    rounds = 0
    while live and rounds < max_rounds:
        for t in list(live):
            try:
                t0 = clock()
                t.sync(t.call())
                results[t.name].synced_samples.append(clock() - t0)
            except Exception as exc:  # noqa: BLE001 -- as above
                results[t.name].synced_error = f"{type(exc).__name__}: {exc}"[:500]
                live.remove(t)
            results[t.name].note(notes)
        rounds += 1
        if rounds >= min_rounds and clock() - start >= time_limit:
            break
