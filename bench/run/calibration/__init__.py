"""Per-run calibration: what this machine can do, measured once at the start of a run.

- **peak**: GFLOP/s of a large float32 matmul in numpy (timed here, in the parent) and in each
  framework mode (``peak_matmul`` workload); the report reads achieved GFLOP/s against the best.
- **dispatch floor**: time per call of a no-op (``dispatch`` workload) in each mode; a result
  near its mode's floor measures the framework's per-call overhead, not the computation.
- **bandwidth**: GB/s of a STREAM-like triad (``bandwidth`` workload) in each framework mode;
  with the peak, the two ceilings of the report's roofline.

All are ordinary workloads, measured by the run's own workers (:class:`Calibration`: each
worker's calibration groups before its cases, so no framework starts for it alone) with the
same protocol as every case (short settings, :data:`PROTOCOL`); the next run on the same
machine and software may read it instead (``jitbench.run.calibration.kept``). Their summary
goes to ``meta.json`` under ``"calibration"`` (format: :func:`summarize`), never into
results.jsonl, so the result rows stay the cases the user asked for. It costs seconds (the
run's meta records how long its groups took: ``calibration.elapsed_s``).
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

from jitbench.define.modes import MODES
from jitbench.define.workload import Case, group_cases
from jitbench.protocol.settings import Protocol
from jitbench.results import row as rows_mod
from jitbench.run.calibration import kept, peak_matmul

CALIBRATION_VERSION = 2  # 2: "bandwidth" added

SOURCES = ("jitbench.run.calibration.peak_matmul", "jitbench.run.calibration.dispatch",
           "jitbench.run.calibration.bandwidth")

# Short: these settle fast and only need a few percent of precision. The fixed protocol
# (no verdicts: nothing is compared), no A/A control, no interference check: with the run's
# defaults the calibration sampled each group for its whole 6-s budget, a seventh of a quick
# run
PROTOCOL = Protocol(min_time=0.1, min_samples=5, max_samples=200, max_time=2.0,
                    warmup_max_time=1.0, precision=None, switch_calls=1, alone_samples=0,
                    aa_control="off")


def _floor_from(framework: str, mode: str) -> str | None:
    """The mode whose dispatch floor ``mode`` borrows (``Mode.floor_from``): a mode needing a
    worker process of its own would cost another framework start (~5 s) for a number known in
    advance (TF auto-clustering forms no XLA cluster around a no-op or a single matmul, so it
    dispatches exactly as graph mode does)."""
    return MODES[(framework, mode)].floor_from


def _load(source: str):
    from jitbench.define.workload import load_workload

    return load_workload(source)


def calibration_cases(cases: Iterable[Case]) -> list[Case]:
    """The calibration cases for the frameworks, devices and modes of ``cases``: every mode
    that runs in the default worker environment (the others are derived or not measured)."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for c in cases:
        wanted.setdefault((c.framework, c.device), set()).add(c.mode)
        derived = _floor_from(c.framework, c.mode)
        if derived:
            wanted[(c.framework, c.device)].add(derived)
    out = []
    for source in SOURCES:
        wl = _load(source)
        for (framework, device), modes in sorted(wanted.items()):
            if wl.builder(framework) is None:
                continue
            params = dict(wl.grid["quick"][0])
            if wl.name == peak_matmul.WORKLOAD.name:  # each device's plateau
                params["n"] = peak_matmul.N_BY_DEVICE.get(device, params["n"])
            for mode in sorted(modes):
                spec = MODES[(framework, mode)]
                if spec.floor_from or spec.worker_group != "default":  # borrowed or not here
                    continue
                out.append(Case(wl.name, "default", wl.label(params),
                                json.dumps(dict(params), sort_keys=True), "float32", framework,
                                device, mode, "quick", source))
    return out


def numpy_peak(n: int | None = None, reps: int = 7,
               clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """float32 n×n×n matmul in numpy, timed in this process over ``reps`` calls."""
    import numpy as np
    from jitbench.run.calibration import peak_matmul

    n = n or peak_matmul.N
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    a @ b  # warm-up: threads started, pages touched
    times = []
    for _ in range(reps):
        t0 = clock()
        a @ b
        times.append(clock() - t0)
    med, best = statistics.median(times), min(times)
    return {"source": "numpy", "framework": None, "mode": None, "device": "cpu",
            "gflops": 2.0 * n ** 3 / best / 1e9, "gflops_median": 2.0 * n ** 3 / med / 1e9,
            "min_s": best, "median_s": med, "status": "ok", "error": None}


def summarize(rows: Sequence[dict[str, Any]], numpy_entry: dict[str, Any] | None,
              modes: Iterable[tuple[str, str, str]] = (), elapsed_s: float | None = None
              ) -> dict[str, Any]:
    """``meta["calibration"]`` from the worker rows of the calibration cases.

    ``modes`` lists the (framework, mode, device) of the run, so modes that were derived or not
    measured say so. Format (version 2)::

        {"version": 2, "protocol": {...}, "elapsed_s": 9.7,
         "peak": [{"source": "numpy"|"tf"|"jax", "framework", "mode", "device",
                   "gflops" (from the fastest call: what the machine can do),
                   "gflops_median", "min_s", "median_s", "status", "error"}, ...],
         "dispatch": [{"framework", "mode", "device", "floor_s", "status", "note"}, ...],
         "bandwidth": [{"source", "framework", "mode", "device", "gbps" (fastest call),
                        "gbps_median", "bytes" (per call, STREAM count), "min_s",
                        "median_s", "status", "error"}, ...]}
    """
    peak, dispatch, bandwidth = [], [], []
    if numpy_entry:
        peak.append(dict(numpy_entry))
    for r in rows:
        status = r.get("status")
        if r.get("workload") == "calibration_peak_matmul":
            best = r.get("min_s") if status == "ok" else None
            peak.append({"source": r["framework"], "framework": r["framework"],
                         "mode": r["mode"], "device": r["device"],
                         "gflops": r["flops"] / best / 1e9 if best and r.get("flops") else None,
                         "gflops_median": r.get("gflops") if status == "ok" else None,
                         "min_s": best, "median_s": r.get("median_s"), "status": status,
                         "error": r.get("error")})
        elif r.get("workload") == "calibration_bandwidth":
            bandwidth.append(_bandwidth_entry(r))
        elif r.get("workload") == "calibration_dispatch":
            dispatch.append({"framework": r["framework"], "mode": r["mode"],
                             "device": r["device"],
                             "floor_s": r.get("median_s") if status == "ok" else None,
                             "status": status, "note": r.get("error")})
    measured = {(d["framework"], d["mode"], d["device"]): d for d in dispatch}
    for framework, mode, device in sorted(set(modes)):
        if (framework, mode, device) in measured:
            continue
        source = _floor_from(framework, mode)
        base = measured.get((framework, source, device)) if source else None
        if base is not None and base["status"] == "ok":
            dispatch.append({"framework": framework, "mode": mode, "device": device,
                             "floor_s": base["floor_s"], "status": "derived",
                             "note": f"taken from {source}: a no-op forms no XLA cluster, so "
                                     f"{mode} dispatches as {source} does"})
        else:
            dispatch.append({"framework": framework, "mode": mode, "device": device,
                             "floor_s": None, "status": "not measured",
                             "note": "needs a worker process of its own"})
    dispatch.sort(key=lambda d: (d["device"], d["framework"], d["mode"]))
    return {"version": CALIBRATION_VERSION, "protocol": PROTOCOL.__dict__.copy(),
            "elapsed_s": None if elapsed_s is None else round(elapsed_s, 3),
            "peak": peak, "dispatch": dispatch, "bandwidth": bandwidth}


def _bandwidth_entry(r: dict[str, Any]) -> dict[str, Any]:
    """One ``bandwidth`` entry of :func:`summarize` from a triad row: bytes the triad must move
    (STREAM's count) over the fastest call, and over the median."""
    from jitbench.run.calibration.bandwidth import bytes_moved

    ok = r.get("status") == "ok"
    moved = bytes_moved(r["params"]) if isinstance(r.get("params"), dict) else None
    best, median = (r.get("min_s"), r.get("median_s")) if ok else (None, None)
    return {"source": r["framework"], "framework": r["framework"], "mode": r["mode"],
            "device": r["device"], "gbps": moved / best / 1e9 if moved and best else None,
            "gbps_median": moved / median / 1e9 if moved and median else None, "bytes": moved,
            "min_s": best, "median_s": median, "status": r.get("status"),
            "error": r.get("error")}


class Calibration:
    """The calibration of one run's cases, measured by the run's own workers: its groups go
    first on each worker (:meth:`groups`, which the loop runs with :data:`PROTOCOL`), so the
    calibration starts no framework of its own; the loop hands their rows here (:meth:`add`)
    instead of to the results, and :attr:`complete` says when every one of them has come."""

    def __init__(self, cases: Sequence[Case], worker_env: Mapping[str, str]):
        """``worker_env``: the variables the run's workers get (part of what a kept
        calibration must match: :attr:`facts`)."""
        self.cases = calibration_cases(cases)
        self.ids = {c.case_id for c in self.cases}
        self.modes = {(c.framework, c.mode, c.device) for c in cases}
        self.rows: list[dict[str, Any]] = []
        self.facts = kept.facts(self.cases, worker_env, CALIBRATION_VERSION)
        self.numpy_entry: dict[str, Any] | None = None

    def kept_summary(self) -> dict[str, Any] | None:
        """The calibration an earlier run kept for these :attr:`facts`, or None."""
        return kept.load(self.facts)

    def start(self) -> None:
        """Before its groups: numpy's peak, timed in this process (no worker busy yet)."""
        if any(c.device == "cpu" for c in self.cases):
            self.numpy_entry = numpy_peak()

    def groups(self) -> list[list[Case]]:
        return group_cases(self.cases)

    def owns(self, case_id: str | None) -> bool:
        return case_id in self.ids

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def failed(self, case: Case, exc) -> None:
        self.rows.append(rows_mod.failure(case, exc.status, str(exc)))

    @property
    def complete(self) -> bool:
        return len({r.get("case_id") for r in self.rows}) >= len(self.ids)

    def summary(self) -> dict[str, Any]:
        """``meta["calibration"]`` (:func:`summarize`); its ``elapsed_s``: the time its groups
        took on the workers."""
        spans: dict[tuple, list[float]] = {}
        for r in self.rows:
            if r.get("started_at") and r.get("finished_at"):
                key = (r.get("workload"), r.get("framework"), r.get("device"))
                spans.setdefault(key, []).extend((r["started_at"], r["finished_at"]))
        elapsed = sum(max(t) - min(t) for t in spans.values())
        return summarize(self.rows, self.numpy_entry, self.modes, elapsed)

    def keep(self, summary: Mapping[str, Any], run_id: str) -> None:
        """Keep ``summary`` for the next run with the same :attr:`facts`."""
        kept.keep(self.facts, summary, run_id)

    def handlers(self, record, say: Callable[[str], None], on_row, on_failure, on_group):
        """The run's group handlers with this calibration's own in front: its groups' rows and
        failures come here (and, once all have, the summary goes into ``record``'s meta.json
        and is kept for the next run), its groups are announced with ``say`` and run with
        :data:`PROTOCOL`; every other call goes on to the run's handler. Returns
        ``(on_row, on_failure, on_group, protocol_for)`` for ``GroupLoop.run``."""
        def done() -> None:
            if self.complete:
                summary = self.summary()
                record.set_calibration(summary)
                self.keep(summary, record.run_id)

        def row(r: dict[str, Any], retried: str | None) -> None:
            if not self.owns(r.get("case_id")):
                return on_row(r, retried)
            self.add(r)
            done()

        def failure(case: Case, exc, log, retried: str | None) -> None:
            if not self.owns(case.case_id):
                return on_failure(case, exc, log, retried)
            self.failed(case, exc)
            done()

        def group(g: Sequence[Case]) -> None:
            if not self.owns(g[0].case_id):
                return on_group(g)
            say(f"calibration: {describe(g)}")

        def protocol_for(g: Sequence[Case]) -> Protocol | None:
            return PROTOCOL if self.owns(g[0].case_id) else None

        return row, failure, group, protocol_for


def describe(group: Sequence[Case]) -> str:
    """``jax cpu: dispatch of aot, eager, jit``: a calibration group, for the progress line."""
    framework, device = group[0].framework, group[0].device
    return (f"{framework} {device}: {group[0].workload.removeprefix('calibration_')} of "
            f"{', '.join(sorted({c.mode for c in group}))}")
