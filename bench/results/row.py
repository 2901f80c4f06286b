"""The result row: the one module that knows its fields.

A row is one case × mode, whatever happened to it. Every writer builds it here: the worker (a
measured mode, a mode that failed, a group whose setup failed), the runner (a worker that died
or hung: :func:`failure`, then :func:`stamp` with the run id), the pytest plugin (the same
fields in pytest-benchmark's ``extra_info``) and the pytest-benchmark importer.

Format history of results.jsonl (``schema_version`` in every row):
  1 — first format: one JSON object per case × mode (docs/results.md; every field:
      bench/results/fields.py).
"""

from __future__ import annotations

import math
import re
import statistics
from typing import Any, Callable, Mapping, Sequence

from jitbench.analysis.stats import bootstrap_ratio_ci, paired_ratio_ci
from jitbench.define.workload import Case

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


def stamp(row: Mapping[str, Any], run_id: str, retried_after: str | None = None,
          ab: tuple[str, int] | None = None) -> dict[str, Any]:
    """The row as the run records it: with its run id (and why it was measured again, when a
    group-mate's failure sent it to a fresh worker; in an A/B, its arm and round)."""
    out = {"schema_version": row.get("schema_version", SCHEMA_VERSION), "run_id": run_id}
    out.update(row)
    if retried_after:
        out["retried_after"] = retried_after
    if ab is not None:
        out["ab_arm"], out["ab_round"] = ab
    return out


def expected_failure(case: Case, workload=None) -> str | None:
    """The workload's reason to expect ``case`` to fail, or None. ``workload``: the loaded
    :class:`~jitbench.define.workload.Workload` when the caller has it (else it is loaded from
    ``case.source``; a workload that no longer loads expects nothing: the row is written
    anyway, the reason is extra information)."""
    if workload is None:
        from jitbench.define.workload import load_workload

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


# --------------------------------------------------------------------------- measured fields

def timing_fields(result) -> dict[str, Any]:
    """First call and warm-up of a :class:`~jitbench.protocol.timing.ModeResult` (outside the
    samples)."""
    fields = {"first_call_s": result.first_call_s, "early_calls_s": result.early_calls_s,
              "warmup_calls": result.warmup_calls, "warmup_s": result.warmup_s,
              "settled": result.settled}
    if result.later_notes:  # it compiled again after the first call: the framework's why
        fields["recompile_reasons"] = result.later_notes[:5]
    return fields


def interference_fields(results, protocol) -> dict[str, dict[str, Any]]:
    """The interference check of a group's modes (``jitbench.protocol.interference``), per mode:
    ``alone_median_s``, ``alone_samples`` and ``alone_again_samples`` (its two blocks alone,
    after the interleaved phase), ``interference`` (interleaved / alone, the drift all modes
    shared taken out), ``interference_shared``, ``interference_noise``,
    ``interference_flag``, and ``alone_error`` when a block failed; a mode that was not
    interleaved with another gets none of them."""
    from jitbench.protocol.interference import interference

    fields = interference(results, protocol.interference_tolerance, protocol.interference_z)
    for mode, r in results.items():
        if r.alone_error:
            fields.setdefault(mode, {})["alone_error"] = r.alone_error
    return fields


def aa_fields(samples: Sequence[float], control) -> dict[str, Any]:
    """The A/A control, on the row of the mode it repeats: that mode built a second time and
    timed like a JIT mode beside it (a :class:`~jitbench.protocol.timing.ModeResult`). ``aa_ratio``
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
            "aa_pairing": "same worker, interleaved",
            **verdict_fields(control.verdicts, prefix="aa_verdict")}


def verdict_fields(verdicts: Mapping[str, Mapping[str, Any]], prefix: str = "verdict"
                   ) -> dict[str, Any]:
    """A mode's verdict against its baseline (``ModeResult.verdicts``, sequential stopping):
    ``verdict``, ``verdict_baseline``, ``verdict_speedup``, ``verdict_ci_low`` / ``_high``,
    ``verdict_blocks``, ``verdict_rounds``, ``verdict_s``; with ``prefix="aa_verdict"`` the same
    for an A/A control (no ``_baseline``: the control repeats the row's own mode)."""
    if not verdicts:
        return {}
    baseline, v = next(iter(verdicts.items()))
    out = {prefix: v["verdict"]}
    if prefix == "verdict":
        out["verdict_baseline"] = baseline
    for k in ("speedup", "ci_low", "ci_high", "blocks", "rounds", "s"):
        out[f"{prefix}_{k}"] = v.get(k)
    return out


def pair_verdict_fields(verdicts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A JIT mode against its other JIT-off modes (after its nearest in ``verdicts``), from the
    same blocks: ``pair_verdicts`` = {baseline: {verdict, speedup, ci_low, ci_high, blocks}};
    nothing when there is none."""
    rest = list(verdicts.items())[1:]
    if not rest:
        return {}
    keep = ("verdict", "speedup", "ci_low", "ci_high", "blocks")
    return {"pair_verdicts": {b: {k: v.get(k) for k in keep} for b, v in rest}}


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
    from jitbench.protocol.timing import summarize

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
    """A measured row as a pytest-benchmark entry's ``extra_info``
    (``jitbench.results.pytest_import``
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


# --------------------------------------------------------------------------- latency

def synced_speedup(baseline: Sequence[float], jit: Sequence[float], confidence: float = 0.95,
                   paired: bool = True) -> dict[str, float] | None:
    """median(baseline) / median(jit) of two modes' synced calls with its ``confidence``
    interval: ``paired`` (taken in the same rounds: ``jitbench.protocol.latency``) by
    resampling whole rounds, otherwise each side on its own. None with fewer than 3 calls on a
    side."""
    if min(len(baseline), len(jit)) < 3:
        return None
    ci = paired_ratio_ci if paired else bootstrap_ratio_ci
    lo, hi = ci(baseline, jit, confidence=confidence)
    return {"speedup": statistics.median(baseline) / statistics.median(jit), "ci_low": lo,
            "ci_high": hi}


def latency_fields(mode: str, results: Mapping[str, Any], baseline: str | None,
                   confidence: float = 0.95) -> dict[str, Any]:
    """Row fields: ``synced_median_s`` and ``synced_samples`` of every mode with synced calls;
    for a JIT mode, ``synced_speedup``, ``synced_ci_low`` / ``synced_ci_high`` against
    ``baseline`` (its verdict's), and ``synced_vs_pipelined``: how many times its pipelined
    speedup the synced one is, where the row's verdict gives the pipelined one."""
    r = results[mode]
    out: dict[str, Any] = {}
    if r.synced_error:
        out["synced_error"] = r.synced_error
    if not r.synced_samples:
        return out
    out["synced_median_s"] = statistics.median(r.synced_samples)
    out["synced_samples"] = list(r.synced_samples)
    base = results.get(baseline) if baseline else None
    if base is None or baseline == mode or not base.synced_samples:
        return out
    s = synced_speedup(base.synced_samples, r.synced_samples, confidence,
                       paired=base.synced_in_rounds and r.synced_in_rounds)
    if s is None:
        return out
    out.update(synced_speedup=s["speedup"], synced_ci_low=s["ci_low"],
               synced_ci_high=s["ci_high"])
    piped = (r.verdicts.get(baseline) or {}).get("speedup")
    if piped and math.isfinite(piped) and piped > 0:
        out["synced_vs_pipelined"] = s["speedup"] / piped
    return out


# --------------------------------------------------------------------------- a measured group

def group_rows(modes: Sequence[str], results: Mapping[str, Any], *,
               row: Callable[..., dict[str, Any]], adapter, protocol, flops: float | None,
               rtol: float, atol: float, check: Callable[[str, Any], tuple[Any, str | None]],
               counters: bool = True,
               extra: Callable[[str, Any], Mapping[str, Any]] | None = None,
               precision: str | None = None) -> list[dict[str, Any]]:
    """The rows of one measured group, one per mode in ``modes``: what every front door that
    measures a group in a process writes (a run's worker, ``jitbench.measure``).

    ``results``: mode -> :class:`~jitbench.protocol.timing.ModeResult`; ``row(mode, **fields)``
    builds the mode's row (its identity and the front door's own stamps); ``check(mode,
    result)`` compares the output -> (the comparison with its ``fields``, the mismatch message
    or None); ``counters``: keep the adapter's compile counters (and what the mode did with
    them, ``adapter.mode_facts``); ``extra(mode, result)``: fields only this front door has
    (memory, machine load, HLO facts, the A/A control); ``precision``: what the group's
    matrix products ran at (``matmul_precision``, on every row, failed ones too)."""
    checks = interference_fields(results, protocol)
    out = []
    for mode in modes:
        r = results[mode]
        common: dict[str, Any] = dict(
            **timing_fields(r), loops=r.loops, sync_overhead_s=r.overhead_s,
            pipeline_gap_s=r.pipeline_gap_s, flops=flops,
            interleaved_with=[m for m in modes if m != mode], rtol=rtol, atol=atol,
            matmul_precision=precision)
        if counters:
            common.update(counter_fields(r.counters_first, r.counters_warmup,
                                         r.counters_samples))
            # e.g. TF auto-clustering that formed no cluster ran as plain graph mode
            common.update(adapter.mode_facts(mode, r.counters_first))
        common.update(verdict_fields(r.verdicts))
        common.update(pair_verdict_fields(r.verdicts))
        common.update(latency_fields(mode, results, next(iter(r.verdicts), None),
                                     protocol.confidence))
        if extra is not None:
            common.update(extra(mode, r))
        common.update(checks.get(mode, {}))
        if not r.ok:
            status = adapter.classify(r.error, r.error_phase)
            out.append(row(mode, **common, **error_fields(status, r.error, r.error_phase)))
            continue
        checked, error = check(mode, r)
        out.append(row(mode, **common, **sample_fields(r.samples or r.compiling_samples, flops),
                       status="mismatch" if error else "ok", error=error,
                       compiling_samples=len(r.compiling_samples),
                       steady_state_compiles=r.steady_state_compiles, **checked.fields))
    return out
