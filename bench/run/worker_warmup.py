"""Framework warm-up: the one-time start-up of a worker, paid before its first case group.

The first call a process makes in a mode pays more than that case's own trace and compile:
thread pools, kernel registries, the XLA compiler itself. Charged to whichever case came
first, it made a first call depend on its position in the worker. So a worker runs a tiny
function unrelated to any workload (the adapter's ``warmup_stages``) a few times in each mode
it will measure, before its first group, and reports that warm-up's own first-call time as
``startup`` in its hello: it goes to ``meta.json`` (``meta["workers"][i]["startup"]``), never
into a case row.

The runner says which modes and device through the worker's environment (:data:`ENV`), since
the worker process only learns its cases after it has started.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Mapping

from jitbench.define.modes import MODES, modes_for

ENV = "JITBENCH_WARMUP"  # {"device": "cpu", "modes": ["eager", ...]} as JSON
CALLS = 3  # per mode: the first (timed, reported) and two more, untimed


def worker_env(framework: str, worker_group: str, device: str) -> dict[str, str]:
    """The environment entry telling a worker of ``(framework, worker_group, device)`` to warm
    up every mode of its group: ``{"JITBENCH_WARMUP": '{"device": "cpu", ...}'}``. Modes only a
    training step can run (JAX ``donate``) are left out: their one-time start-up is their
    plain sibling's (``jit``), and the tiny function has no state to donate."""
    modes = [m for m in modes_for(framework, stateful=False)
             if MODES[(framework, m)].worker_group == worker_group]
    return {ENV: json.dumps({"device": device, "modes": modes})}


def requested(environ: Mapping[str, str] = os.environ) -> tuple[str, list[str]] | None:
    """(device, modes) the runner asked for, or None (no warm-up: calibration, tests)."""
    text = environ.get(ENV)
    if not text:
        return None
    spec = json.loads(text)
    return spec["device"], list(spec["modes"])


def run(adapter, device: str, modes: list[str], calls: int = CALLS,
        clock: Callable[[], float] = time.perf_counter) -> dict[str, dict[str, Any]]:
    """Call the adapter's tiny function ``calls`` times in each mode; per mode, the first
    call's time and what the adapter's counters saw during it (``{"first_call_s": 0.09,
    "compiles": 1, ...}``), or ``{"error": ...}``. Never raises: a warm-up that fails leaves
    the cases to fail (or not) on their own."""
    available, why = adapter.device_available(device)
    if not available:
        return {m: {"error": why} for m in modes}
    out: dict[str, dict[str, Any]] = {}
    try:
        stages, inputs = adapter.warmup_stages()
        placed = adapter.place(inputs, device)
    except Exception as exc:  # noqa: BLE001 -- see the docstring
        return {m: {"error": f"{type(exc).__name__}: {exc}"[:500]} for m in modes}
    for mode in modes:
        try:
            fn = adapter.build(stages, mode, device)
            before = adapter.counters()
            t0 = clock()
            adapter.sync(fn(*placed))
            first = clock() - t0
            after = adapter.counters()
            for _ in range(calls - 1):
                adapter.sync(fn(*placed))
        except Exception as exc:  # noqa: BLE001 -- see the docstring
            out[mode] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            continue
        out[mode] = {"first_call_s": first, "calls": calls}
        out[mode].update({k: v - before.get(k, 0) for k, v in after.items()
                          if v - before.get(k, 0)})
    adapter.counters()  # the warm-up's log lines are read here, not charged to a case
    return out
