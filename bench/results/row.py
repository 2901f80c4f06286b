"""The result row: the one module that knows its fields.

A row is one case × mode, whatever happened to it. Every writer builds it here: the worker (a
measured mode, a mode that failed, a group whose setup failed), the runner (a worker that died
or hung: :func:`failure`, then :func:`stamp` with the run id), the pytest plugin (the same
fields in pytest-benchmark's ``extra_info``) and the pytest-benchmark importer.

Format history of results.jsonl (``schema_version`` in every row):
  1 — first format: one JSON object per case × mode (see README, "Result rows").
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Mapping, Sequence

from bench.define.workload import Case

SCHEMA_VERSION = 1


def case_fields(case: Case) -> dict[str, Any]:
    """What was measured: the case's identity, the same in every row of it."""
    return {"case_id": case.case_id, "workload": case.workload, "variant": case.variant,
            "size": case.size, "size_set": case.size_set, "params": case.params,
            "dtype": case.dtype, "framework": case.framework, "mode": case.mode,
            "jit": case.jit, "device": case.device, "source": case.source}


def new_row(case: Case, **fields: Any) -> dict[str, Any]:
    """A row of ``case``: version, identity, then ``fields`` (which win)."""
    row: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    row.update(case_fields(case))
    row.update(fields)
    return row


def stamp(row: Mapping[str, Any], run_id: str, retried_after: str | None = None
          ) -> dict[str, Any]:
    """The row as the run records it: with its run id (and why it was measured again, when a
    group-mate's failure sent it to a fresh worker)."""
    out = {"schema_version": row.get("schema_version", SCHEMA_VERSION), "run_id": run_id}
    out.update(row)
    if retried_after:
        out["retried_after"] = retried_after
    return out


def expected_failure(case: Case, workload=None) -> str | None:
    """The workload's reason to expect ``case`` to fail, or None. ``workload``: the loaded
    :class:`~bench.define.workload.Workload` when the caller has it (else it is loaded from
    ``case.source``; a workload that no longer loads expects nothing: the row is written
    anyway, the reason is extra information)."""
    if workload is None:
        from bench.define.workload import load_workload

        try:
            workload = load_workload(case.source)
        except Exception:  # noqa: BLE001 -- see the docstring
            return None
    failures = workload.expected_failures
    return (failures.get((case.framework, case.mode, case.variant))
            or failures.get((case.framework, case.mode)))


def failure(case: Case, status: str, error: str, *, workload=None, **fields: Any
            ) -> dict[str, Any]:
    """The row of a case that produced no measurement: ``status`` (``runtime_error``,
    ``crashed``, ``timeout``, ``skipped``, ...), the ``error`` text, extra ``fields``
    (error_type, error_phase, worker_exit, ...), and the expected-failure reason if any."""
    return new_row(case, status=status, error=error, **fields,
                   **expected_fields(case, workload))


def expected_fields(case: Case, workload=None) -> dict[str, str]:
    """``{"expected_failure": reason}`` where the workload expects ``case`` to fail, else {}."""
    reason = expected_failure(case, workload)
    return {"expected_failure": reason} if reason else {}


# --------------------------------------------------------------------------- reading a row

STATUSES = ("ok", "mismatch", "compile_error", "runtime_error", "timeout", "oom", "crashed",
            "skipped")


@dataclasses.dataclass(frozen=True)
class Field:
    """A field every reader relies on: its kind (``text``, ``number`` (finite), ``seconds`` (a
    duration: 1e-12 <= s < 1e6), ``count``, ``flag``, ``seconds list``, ``texts``,
    ``mapping``) and what it means."""

    kind: str
    doc: str


# The fields readers rely on (analysis, report, nightly); a row may carry many more (compile
# counters per phase, noise, HLO facts), which are kept as they are.
IDENTITY = ("run_id", "workload", "variant", "size", "dtype", "framework", "mode", "device",
            "status")
FIELDS: dict[str, Field] = {
    "schema_version": Field("count", "format version of the row (this module's history)"),
    "run_id": Field("text", "the run the row belongs to (its folder's name)"),
    "case_id": Field("text", "workload-variant-framework-mode-device-dtype-size"),
    "workload": Field("text", "the suite's name"),
    "variant": Field("text", "the workload's variant (e.g. fused, split)"),
    "size": Field("text", "the size's label (e.g. 512x512x512)"),
    "size_set": Field("text", "the grid the size came from (quick, full)"),
    "params": Field("mapping", "the workload's parameters of this size"),
    "dtype": Field("text", "float32 or float64"),
    "framework": Field("text", "tf or jax"),
    "mode": Field("text", "the JIT mode (eager, graph, xla, autoclustering; eager, jit, aot)"),
    "jit": Field("flag", "whether the mode compiles with XLA"),
    "device": Field("text", "cpu or gpu"),
    "source": Field("text", "the module or file that defines the workload"),
    "status": Field("text", "ok | " + " | ".join(STATUSES[1:])),
    "error_type": Field("text", "the exception's class, where the case failed"),
    "error": Field("text", "the framework's message, where the case failed"),
    "error_phase": Field("text", "setup, first_call, warmup, samples, ..."),
    "expected_failure": Field("text", "the workload's reason to expect this failure"),
    "note": Field("text", "what the harness noticed about this row"),
    "first_call_s": Field("seconds", "the first call: trace + compile + run [s]"),
    "median_s": Field("seconds", "median of the timed samples [s per call]"),
    "mean_s": Field("seconds", "mean of the timed samples [s per call]"),
    "stdev_s": Field("seconds", "standard deviation of the samples [s]"),
    "iqr_s": Field("seconds", "interquartile range of the samples [s]"),
    "min_s": Field("seconds", "fastest sample [s per call]"),
    "max_s": Field("seconds", "slowest sample [s per call]"),
    "n_samples": Field("count", "number of timed samples"),
    "samples": Field("seconds list", "every timed sample [s per call]"),
    "flops": Field("number", "floating-point operations per call (the workload's count)"),
    "gflops": Field("number", "flops / median_s / 1e9"),
    "max_abs_err": Field("number", "largest absolute error against the float64 reference"),
    "max_rel_err": Field("number", "largest relative error against the float64 reference"),
    "max_abs_err_vs_nojit": Field("number", "largest absolute difference to the JIT-off mode"),
    "max_rel_err_vs_nojit": Field("number", "largest relative difference to the JIT-off mode"),
    "rtol": Field("number", "relative tolerance of the reference check"),
    "atol": Field("number", "absolute tolerance of the reference check"),
    "interleaved_with": Field("texts", "the modes timed sample by sample beside this one"),
    "aa_samples": Field("seconds list", "the A/A control's samples (this mode built again) [s]"),
    "aa_median_s": Field("seconds", "median of the A/A control's samples [s]"),
    "early_calls_s": Field("seconds list", "the calls right after the first [s]"),
}

def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _seconds(v) -> bool:
    return _number(v) and MIN_SECONDS <= v < MAX_SECONDS


# a duration outside these is damage, not a measurement: no timer resolves a picosecond (a
# sample is the mean of a batch of calls, never below ~1 ns), no call lasts 11 days
MIN_SECONDS, MAX_SECONDS = 1e-12, 1e6
_KINDS = {
    "text": lambda v: isinstance(v, str),
    # the writer encodes inf as "inf" (JSON has none): an error can be infinite, a time not
    "number": lambda v: v is None or _number(v) or v in ("inf", "-inf"),
    "seconds": lambda v: v is None or _seconds(v),
    "count": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "flag": lambda v: v is None or isinstance(v, bool),
    "seconds list": lambda v: v is None or (isinstance(v, list) and all(map(_seconds, v))),
    "texts": lambda v: v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "mapping": lambda v: v is None or isinstance(v, dict),
}


def check(row: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A row read from disk, made safe to analyse: each field of :data:`FIELDS` of the wrong
    kind is dropped (an identity field becomes ``"?"``, a missing ``case_id`` is rebuilt from
    the identity), with one problem line each. The row is never dropped: every row read is a
    row shown."""
    out, problems = dict(row), []
    for name, field in FIELDS.items():
        if name not in out:
            if name in IDENTITY:
                problems.append(f"no {name!r}")
                out[name] = "?"
            continue
        if not _KINDS[field.kind](out[name]):
            problems.append(f"{name!r} is {type(out[name]).__name__} {str(out[name])[:40]!r}, "
                            f"not {field.kind}")
            out[name] = "?" if name in IDENTITY else None
    if not isinstance(out.get("case_id"), str):
        out["case_id"] = "-".join(str(out[k]) for k in ("workload", "variant", "framework",
                                                         "mode", "device", "dtype", "size"))
    if out["status"] not in STATUSES:
        problems.append(f"status {out['status']!r} is none of {', '.join(STATUSES)}")
    return out, problems


# --------------------------------------------------------------------------- measured fields

def timing_fields(result) -> dict[str, Any]:
    """First call and warm-up of a :class:`~bench.protocol.timing.ModeResult` (outside the
    samples)."""
    fields = {"first_call_s": result.first_call_s, "early_calls_s": result.early_calls_s,
              "warmup_calls": result.warmup_calls, "warmup_s": result.warmup_s,
              "settled": result.settled}
    if result.later_notes:  # it compiled again after the first call: the framework's why
        fields["recompile_reasons"] = result.later_notes[:5]
    return fields


def interference_fields(results, protocol) -> dict[str, dict[str, Any]]:
    """The interference check of a group's modes (``bench.protocol.interference``), per mode:
    ``alone_median_s``, ``alone_samples`` and ``alone_again_samples`` (its two blocks alone,
    after the interleaved phase), ``interference`` (interleaved / alone, the drift all modes
    shared taken out), ``interference_shared``, ``interference_noise``,
    ``interference_flag``, and ``alone_error`` when a block failed; a mode that was not
    interleaved with another gets none of them."""
    from bench.protocol.interference import interference

    fields = interference(results, protocol.interference_tolerance, protocol.interference_z)
    for mode, r in results.items():
        if r.alone_error:
            fields.setdefault(mode, {})["alone_error"] = r.alone_error
    return fields


def aa_fields(samples: Sequence[float], control) -> dict[str, Any]:
    """The A/A control, on the row of the mode it repeats: that mode built a second time and
    timed like a JIT mode beside it (a :class:`~bench.protocol.timing.ModeResult`). ``aa_ratio``
    reads
    like a speedup (this mode's median / the control's); the interval is the analysis' job
    (``aa_samples`` against ``samples``)."""
    import statistics

    if not control.ok or not control.samples or not samples:
        why = f"{type(control.error).__name__}: {control.error}" if control.error else \
            "no valid samples"
        return {"aa_error": why[:500]}
    control_median = statistics.median(control.samples)
    return {"aa_samples": list(control.samples), "aa_median_s": control_median,
            "aa_ratio": statistics.median(samples) / control_median,
            "aa_pairing": "same worker, interleaved"}


def counter_fields(first: Mapping[str, float], warmup: Mapping[str, float],
                   samples: Mapping[str, float]) -> dict[str, Any]:
    """The adapter's counters per phase: ``first_compiles``, ``warmup_...``, ``samples_...``."""
    out = {f"first_{k}": v for k, v in first.items()}
    out.update({f"warmup_{k}": v for k, v in warmup.items()})
    out.update({f"samples_{k}": v for k, v in samples.items()})
    return out


def sample_fields(samples: Sequence[float], flops: float | None) -> dict[str, Any]:
    """Statistics of the timed samples and the GFLOP/s their median gives (None without a
    FLOP count: a user's own function may not say)."""
    from bench.protocol.timing import summarize

    stats = summarize(list(samples))
    median = stats["median_s"]
    return dict(stats, samples=list(samples), n_samples=len(samples),
                gflops=(flops / median / 1e9) if median and flops is not None else None)


# What pytest-benchmark keeps itself (its stats of the rounds) or what only a jitbench run has
# (its worker process, its run id): left out of a benchmark's extra_info.
_NOT_EXTRA = ("schema_version", "run_id", "samples", "n_samples", "median_s", "mean_s",
              "stdev_s", "iqr_s", "min_s", "max_s", "alone_samples", "alone_again_samples",
              "worker_pid",
              "started_at", "finished_at")


def extra_info_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """A measured row as a pytest-benchmark entry's ``extra_info`` (``bench.results.pytest_import``
    reads it back, with pytest-benchmark's statistics as the timing columns)."""
    return {k: v for k, v in row.items() if k not in _NOT_EXTRA}


# TF names the op or the graph node it could not compile or run; JAX's tracing errors name
# the traced function instead (kept in the message).
_OP_PATTERNS = (
    re.compile(r"No registered '([\w>.-]+)' OpKernel"),
    re.compile(r"of '([\w>.-]+)' Op has type"),
    re.compile(r"cannot compute (\w+) as input"),
    re.compile(r"\{\{node ([^}]+)\}\}"),
    re.compile(r"\[Op:(?!__)(\w+)\]"),
)


def failing_op(message: str) -> str | None:
    """The op (or graph node) an error message names, where it names one."""
    for pattern in _OP_PATTERNS:
        m = pattern.search(message)
        if m:
            return m.group(1)
    return None


def error_fields(status: str, exc: BaseException, phase: str) -> dict[str, Any]:
    """A mode that raised: ``status`` as the adapter classified it, the error and its op."""
    message = str(exc).strip() or repr(exc)
    fields = {"status": status, "error_type": type(exc).__name__, "error": message[:4000],
              "error_phase": phase}
    op = failing_op(message)
    if op:
        fields["failing_op"] = op
    return fields
