"""A worker process: one framework, one environment, many jobs. Every child jitbench starts
is one of these (``jitbench.run.worker_parent.Worker`` starts it): a run's case groups, a recompile
sweep's jobs (``jitbench.run.sweep``), ``jitbench.measure(..., isolate=True)``
(``jitbench.userfn.isolate``).

    python -m jitbench.run.worker FRAMEWORK LOG_PATH [WHERE_PATH]

Protocol (JSON lines): the parent writes one job per line on stdin; the worker answers on its
*original* stdout with ``{"type": "hello", ...}`` once, then for each job its rows
(``{"type": "row", "row": {...}}``) and ``{"type": "group_done"}``. A case group is
``{"group": [case, ...], "protocol": {...}}``; any other job names its handler,
``{"handler": "module:function", ...}``: the worker calls ``function(adapter, message)`` and
sends each row it yields; a ``UserError`` it raises goes back as ``{"type": "user_error",
"message": ...}`` (the caller's input was wrong, not the worker). Handlers live with the
front door that owns the job, so this module imports none of them.

File descriptors 1 and 2 are pointed at LOG_PATH before the framework is imported, so library
chatter never corrupts the protocol, XLA's log lines can be parsed (TF adapter), and the runner
can show the last lines of it when a worker dies. ``faulthandler`` writes the Python stack
there too when the process dies of a signal (segfault, abort).

WHERE_PATH is a small file shared through ``mmap``: the worker writes what it is doing into it
(``jitbench.run.wire``: JSON, NUL-padded to a fixed size) whenever that
changes — before the setup of a group, before the first call of each mode, when the calls
switch from one mode to another. When the worker dies or hangs, the runner reads it
(``wire.read_where``) to pin the failure on the mode that caused it, and measures the group's
other modes again in a fresh worker. The markers are encoded in advance, so the only cost inside
a timed call is one identity check.

The worker dies with its runner: it asks Linux for SIGKILL when its parent exits
(``PR_SET_PDEATHSIG``), since it runs in a session of its own (a Ctrl-C meant for the runner
must not reach it directly).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import signal
import sys
import time
import traceback
from typing import Any

from jitbench.define.modes import nearest_baseline, other_pairs, verdict_pairs
from jitbench.define.workload import Case, load_workload
from jitbench.frameworks import device_index
from jitbench.protocol import case_setup
from jitbench.protocol import gpu_state
from jitbench.protocol import machine_load
from jitbench.protocol.timing import Protocol, Timed, measure
from jitbench.results import row as rows
from jitbench.run import worker_start
from jitbench.run import worker_warmup
from jitbench.run import wire
from jitbench.xla import capture as insight

WHERE_SIZE = wire.WHERE_SIZE


class Where:
    """The writing side of WHERE_PATH (see the module docstring)."""

    def __init__(self, path: str | None):
        self.current: bytes | None = None
        self._mm = None
        if path:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, WHERE_SIZE)
                self._mm = mmap.mmap(fd, WHERE_SIZE)
            finally:
                os.close(fd)

    @staticmethod
    def encode(mode: str | None, phase: str) -> bytes:
        return wire.where_bytes(mode, phase)

    def mark(self, data: bytes) -> None:
        self.current = data
        if self._mm is not None:
            self._mm[:] = data

    def set(self, mode: str | None, phase: str) -> None:
        self.mark(self.encode(mode, phase))


def _marked(where: Where, fn, placed, mode: str):
    """``fn(*placed)``, telling WHERE_PATH when this mode starts calling."""
    first = where.encode(mode, "first call: trace + compile + run")
    later = where.encode(mode, "calls after the first")
    pending_first = [True]

    def call():
        if where.current is not later:  # the only cost on the timed path
            if pending_first[0]:
                pending_first[0] = False
                where.mark(first)
                out = fn(*placed)
                where.mark(later)
                return out
            where.mark(later)
        return fn(*placed)

    return call


def _slowed_for_tests(case: Case, timed: Timed) -> Timed:
    """Test hook: JITBENCH_TEST_SLOWDOWN='<case_id glob>=<seconds>' adds that much to every
    call of the matching cases, so regression detection can be tested end to end;
    '<glob>=x1.3' makes everything timed of them 1.3x as long (:func:`_scaled`), '<glob>=x1'
    nothing. Several entries are separated by ';' (the first whose glob matches applies):
    '*-jit-*=x1.1;*-aot-*=x1.05' plants two steps in one night."""
    spec = os.environ.get("JITBENCH_TEST_SLOWDOWN")
    if not spec:
        return timed
    import fnmatch

    amount = next((a for pattern, _, a in (e.rpartition("=") for e in spec.split(";"))
                   if fnmatch.fnmatch(case.case_id, pattern)), None)
    if amount is None:
        return timed
    if amount.startswith("x"):
        factor = float(amount[1:])
        # x1 plants nothing: a change of the recorded environment that moves no number (the
        # inert change nights of a change-night corpus are recorded with it)
        return timed if factor == 1.0 else _scaled(timed, factor)

    def slowed():
        time.sleep(float(amount))
        return timed.call()

    return dataclasses.replace(timed, call=slowed)


def _scaled(timed: Timed, factor: float) -> Timed:
    """``timed`` taking ``factor`` times as long, whatever the protocol times: after each sync,
    the CPU is kept busy for ``factor - 1`` times what the calls since the previous sync and
    this sync took. The calls themselves are left as they are (no wait added between calls
    that pipeline), so the step is the only change: waiting for each call, as this hook once
    did, added a thread hand-off per call and widened the planted series' interval on one
    core (lab notebook, nightly-processes). Busy, not asleep: a sleep is too coarse for µs."""
    began: list[float] = []

    def call():
        if not began:
            began.append(time.perf_counter())
        return timed.call()

    def sync(out) -> None:
        timed.sync(out)
        if began:
            until = time.perf_counter()
            until += (factor - 1) * (until - began.pop())
            while time.perf_counter() < until:
                pass

    return dataclasses.replace(timed, call=call, sync=sync)


def _peak_memory(adapter, timed: list[Timed], results, device: str
                 ) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Device memory, outside the timing: per mode that ran fine, where the framework can
    restart its peak (TF on a GPU), one more call in a window of its own: ``peak_mem_bytes``
    and ``peak_mem_added_bytes`` (above what was in use when the window began: inputs, kept
    outputs, variables); where it cannot (JAX), no extra call and ``process_peak_mem_bytes``,
    the worker's high-water mark after the group, on every row. Nothing on a CPU."""
    try:  # no statistics at all (CPU): no extra call (it cost 2.4 s of a JAX quick run)
        if adapter.peak_memory_bytes(device) is None:
            return {}, {}
        if adapter.reset_peak_memory(device) is None:
            return {}, {"process_peak_mem_bytes": adapter.peak_memory_bytes(device)}
    except Exception:  # memory statistics are extra information, never a failure
        return {}, {}
    peaks: dict[str, dict[str, int]] = {}
    for t in timed:
        if not results[t.name].ok:
            continue
        try:
            start = adapter.reset_peak_memory(device)
            t.sync(t.call())
            peak = adapter.peak_memory_bytes(device)
            peaks[t.name] = {"peak_mem_bytes": peak, "peak_mem_added_bytes": peak - start}
        except Exception:  # as above
            continue
    return peaks, {}


def _answers(work, fns: dict[str, Any], results: dict[str, Any], where: Where
             ) -> dict[str, Any]:
    """Each mode's answer to check: its first call's output, or a training step's k steps
    from its initial state (``Casework.answer``; a failure there leaves the first output, which
    then fails the check against the reference by its shape)."""
    out = {}
    for mode, r in results.items():
        if not r.ok or mode not in fns:
            continue
        where.set(None, f"checking the answer of {mode}")
        try:
            out[mode] = work.answer(fns[mode], r.output)
        except Exception:  # noqa: BLE001 -- reported as the mismatch it causes
            out[mode] = r.output
    return out


AA_SUFFIX = "~aa"  # the A/A control of mode m is timed as "m~aa"


def _pairs(framework: str, modes: list[str], timed: list[str]
           ) -> dict[str, list[tuple[str, str]]]:
    """``pairs`` (``jitbench.define.modes.verdict_pairs``), ``controls``: the A/A control
    against the mode it repeats, judged alike, and ``others``: each JIT mode against the other
    JIT-off modes, judged from the same blocks at the end (``jitbench.protocol.timing.measure``)."""
    base = nearest_baseline(framework)
    return {"pairs": verdict_pairs(framework, modes), "others": other_pairs(framework, modes),
            "controls": [(base + AA_SUFFIX, base)] if base + AA_SUFFIX in timed else []}


def run_group(adapter, cases: list[Case], protocol: Protocol,
              where: Where | None = None, aa: bool = False,
              options: insight.Options | None = None) -> list[dict[str, Any]]:
    """Measure the modes of one case group; one row per case, whatever happens. ``aa``: also
    time the framework's nearest JIT-off mode a second time, built afresh and interleaved
    like a JIT mode (the A/A control), when the group has that mode; its fields go on that
    mode's row (``jitbench.results.row.aa_fields``). ``options``: what to keep of XLA's programs and
    profiles beyond the always-on facts (``jitbench.xla.capture``)."""
    where = where or Where(None)
    where.set(None, "setup: loading the workload, making inputs and the reference, "
                    "building the modes")
    first = cases[0]
    started = time.time()
    wl = load_workload(first.source)

    def row(case: Case, **fields) -> dict[str, Any]:
        return rows.new_row(case, worker_pid=os.getpid(), started_at=started,
                            finished_at=time.time(), **rows.expected_fields(case, wl),
                            **fields)

    available, why = adapter.device_available(first.device)
    if not available:
        return [row(c, status="skipped", error=why) for c in cases]

    def stages():  # its constants on the worker's device, not the framework's default one
        with case_setup.on_device(adapter, first.device):
            return wl.builder(first.framework)(first.params, first.dtype, first.variant)

    def marked(mode, fn, placed):
        return _marked(where, fn, placed, mode)

    try:
        inputs = case_setup.workload_inputs(wl, first)
        reference = case_setup.workload_reference(wl, first, inputs)
        rtol, atol = wl.tolerance[first.dtype]
        adapter.reset()
        precision = case_setup.matmul_precision(adapter, first.device, first.dtype)
        work = case_setup.Casework(adapter, first.framework, first.device, inputs, reference,
                                 rtol, atol, precision=precision,
                                 reduction=wl.reduction_length(first.params, first.variant))
        built = {case.mode: stages() for case in cases}  # kept: jitbench.xla.capture asks for them
        fns = {case.mode: work.build(built[case.mode], case.mode) for case in cases}
        timed = [_slowed_for_tests(case, work.timed(case.mode, fns[case.mode], marked))
                 for case in cases]
        control = nearest_baseline(first.framework)
        if aa and any(c.mode == control for c in cases):
            again = work.timed(control, work.build(stages(), control), marked)
            timed.append(dataclasses.replace(again, name=control + AA_SUFFIX))
    except Exception as exc:  # the workload's own setup failed: every case says so
        msg = f"setup failed: {type(exc).__name__}: {exc}"
        return [row(c, status="runtime_error", error_type=type(exc).__name__, error=msg[:4000],
                    error_phase="setup") for c in cases]

    snap = machine_load.snapshot()
    # the worker's own GPU (JITBENCH_DEVICE_INDEX), before and after the group
    gpu_before = gpu_state.read(device_index()) if first.device == "gpu" else None
    # compile_notes: why the framework compiled (JAX's explained cache misses), per mode
    results = measure(timed, protocol, counters=adapter.counters,
                      notes=getattr(adapter, "compile_notes", None),
                      **_pairs(first.framework, [c.mode for c in cases],
                               [t.name for t in timed]))
    machine = machine_load.between(snap, machine_load.snapshot())
    if gpu_before:
        machine.update(gpu_state.group_fields(gpu_before, gpu_state.read(device_index())))
    peak_mem, process_mem = _peak_memory(adapter, timed, results, first.device)
    answers = _answers(work, fns, results, where)

    # JIT-off output of the same framework, to tell "JIT changed the answer" from "float32"
    nojit_out, nojit_mode = work.nojit(
        {m: answers[m] for m, r in results.items() if r.ok and m in answers}, stages,
        announce=lambda mode: where.set(None, f"computing the {mode} output the JIT modes "
                                              f"are compared with"))

    flops = float(wl.flops(first.params, first.variant))
    where.set(None, "reading the programs XLA built" + (", profiling" if options and
                                                         options.profile else ""))
    looks = insight.capture(adapter, cases, built, work.placed, timed, results, flops,
                            options or insight.Options())
    where.set(None, "checking the outputs")
    by_mode = {case.mode: case for case in cases}

    def extra(mode: str, r) -> dict[str, Any]:
        mem = dict({"peak_mem_bytes": None}, **peak_mem.get(mode, {}))  # None: not known
        fields = dict(**mem, **process_mem, **machine,
                      **looks.get(mode, {}))  # HLO facts, XLA's cost analysis, files
        if mode + AA_SUFFIX in results:
            fields.update(rows.aa_fields(r.samples, results[mode + AA_SUFFIX]))
        added, base = mem.get("peak_mem_added_bytes"), \
            peak_mem.get(nojit_mode or "", {}).get("peak_mem_added_bytes")
        if r.ok and added is not None and base:
            fields["peak_mem_ratio_vs_nojit"] = added / base
        return fields

    def check(mode: str, r):
        checked = work.check(answers.get(mode, r.output), nojit_out, nojit_mode)
        return checked, checked.mismatch

    return rows.group_rows(list(by_mode), results, row=lambda m, **f: row(by_mode[m], **f),
                           adapter=adapter, protocol=protocol, flops=flops, rtol=rtol,
                           atol=atol, check=check, extra=extra, precision=precision)


OWN_PROCESS_ENV = "JITBENCH_OWN_PROCESS"


def resolve(target: str):
    """The object ``module:qualname`` names (a job's handler, a user's function)."""
    import importlib

    module, _, qual = target.partition(":")
    obj = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _run_handler(adapter, msg: dict, where: Where, send) -> None:
    """A job other than a case group: its handler's rows, then ``group_done`` (see the module
    docstring); a bug of the handler's becomes an ``error`` reply with its traceback."""
    from jitbench.errors import UserError

    where.set(None, f"job {msg['handler']}")
    try:
        for row in resolve(msg["handler"])(adapter, msg):
            send({"type": "row", "row": row})
    except UserError as exc:
        send({"type": "user_error", "message": str(exc)})
    except Exception:  # noqa: BLE001 -- the parent reports it; the worker lives on
        tb = traceback.format_exc()
        print(tb, flush=True)
        send({"type": "error", "message": tb[-4000:]})
    send({"type": "group_done"})
    where.set(None, "idle, between jobs")


def protocol_of(fields: dict[str, Any], told: set[str] | None = None) -> Protocol:
    """The protocol a job's message describes, built from the fields this jitbench's
    Protocol knows. A newer parent may send fields added after this jitbench was released (an
    older jitbench in an A/B's arm): they are ignored, so the worker measures with its own
    defaults for them, and named in its log once (``told``: those named so far, updated)."""
    protocol, unknown = Protocol.from_message(fields)
    new = [name for name in unknown if told is None or name not in told]
    if new:
        print(f"[jitbench worker] protocol fields this jitbench does not know, ignored (its "
              f"own defaults apply): {', '.join(new)}", flush=True)
        if told is not None:
            told.update(new)
    return protocol


def _die_with_parent() -> None:
    """SIGKILL this worker when the runner exits, however it exits (Linux only)."""
    parent = os.environ.get("JITBENCH_RUNNER_PID")
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the closed stdin still ends us later
        return
    if parent and os.getppid() != int(parent):  # the runner died before prctl took effect
        os._exit(1)


def main(argv: list[str]) -> int:
    framework, log_path = argv[0], argv[1]
    where = Where(argv[2] if len(argv) > 2 else None)
    _die_with_parent()
    proto = worker_start.output_to_log(log_path)
    worker_start.pin_to_cores()
    print(f"[jitbench worker] pid {os.getpid()} starting ({framework})", flush=True)

    def send(msg: dict) -> None:
        proto.write(wire.line(msg))
        proto.flush()

    from jitbench.frameworks import get_adapter

    # "0": the job is a user's function, whose session settings (JAX's float64 switch, its
    # logging) must stay as a user's process has them (jitbench.userfn.isolate)
    own = os.environ.get(OWN_PROCESS_ENV, "1") != "0"
    adapter = get_adapter(framework, log_path=log_path, own_process=own)
    adapter.counters()  # skip the import-time log lines
    warmed = None
    asked = worker_warmup.requested()
    # one-time start-up, paid here rather than by the first case (jitbench.run.worker_warmup)
    if asked:
        where.set(None, "warm-up: a tiny function in each mode, before any case")
        warmed = worker_warmup.run(adapter, *asked)
    send({"type": "hello", "pid": os.getpid(), "framework": framework,
          "versions": adapter.versions(), "devices": adapter.device_info(),
          "startup": warmed,  # and the cores it may run on (the process profile pins it)
          "cpu_affinity": sorted(os.sched_getaffinity(0))
          if hasattr(os, "sched_getaffinity") else None})
    aa_done = checked = False  # the A/A control, the interference check: run once yet?
    told: set[str] = set()  # the protocol fields this jitbench does not know, named in the log
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = wire.message(line)
        if msg.get("handler"):
            _run_handler(adapter, msg, where, send)
            continue
        cases = [Case.from_dict(c) for c in msg["group"]]
        print(f"[jitbench worker] group {cases[0].case_id} "
              f"[{','.join(c.mode for c in cases)}]", flush=True)
        try:
            protocol = protocol_of(msg.get("protocol") or {}, told)
            aa = protocol.aa_control == "every" or (protocol.aa_control == "first"
                                                    and not aa_done)
            if protocol.interference_check == "first" and checked:
                protocol = dataclasses.replace(protocol, alone_samples=0)
            out = run_group(adapter, cases, protocol.for_device(cases[0].device), where, aa=aa,
                            options=insight.Options.from_message(msg.get("insight")))
            aa_done = aa_done or any("aa_ratio" in r or "aa_error" in r for r in out)
            checked = checked or any("alone_median_s" in r for r in out)
        except Exception as exc:  # a bug of ours, or a message it cannot read (a protocol
            # setting out of range): still a row per case, and the worker lives on
            tb = traceback.format_exc()
            print(tb, flush=True)
            out = [rows.failure(c, "runtime_error", tb[-4000:], error_type=type(exc).__name__)
                   for c in cases]
        for r in out:
            send({"type": "row", "row": r})
        send({"type": "group_done"})
        where.set(None, "idle, between groups")
    if own:
        _leave_now()
    return 0


def _leave_now() -> None:
    """End jitbench's own worker without the interpreter's teardown, once its parent closed
    the channel: TensorFlow's teardown alone costs about as much as a small group's samples,
    paid by every worker of every run and by each fresh process of an A/B
    (docs/lab/make-bench-time/index.md); the worker has nothing left to write but its flushed
    output. The exit handlers still run (the XLA dump folder's removal among them, and
    ``logging``'s flush): the teardown's cost is the interpreter's finalization, not them. Not
    a worker of ``isolate=True``: it runs a user's code, which may count on a normal exit."""
    import atexit

    atexit._run_exitfuncs()  # noqa: SLF001 -- the handlers of a normal exit, without finalization
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
