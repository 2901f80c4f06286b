"""The row's fields: what each means (the docs' result-columns page is generated from here)
and how a row read from disk is checked (``check``: a hand edit never crashes a reader).

The row is built in ``jitbench.results.row``; its format history is there too.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from jitbench.define.modes import FRAMEWORKS as _FRAMEWORKS
from jitbench.define.modes import MODES as _MODES
from jitbench.results.row import SCHEMA_VERSION

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
    "mode": Field("text", "the JIT mode: " + "; ".join(
        f"{fw} " + ", ".join(m for (f, m) in _MODES if f == fw) for fw in _FRAMEWORKS)),
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
    "synced_median_s": Field("seconds", "latency: median of calls each timed alone with a "
                             "device sync after it [s per call] (median_s is the throughput "
                             "time: calls back to back, one sync per sample)"),
    "synced_samples": Field("seconds list", "every synced call [s], in rounds over the modes"),
    "synced_speedup": Field("number", "baseline synced median / this mode's, against "
                            "verdict_baseline: the speedup a caller that waits for every "
                            "result sees"),
    "synced_ci_low": Field("number", "lower end of synced_speedup's 95% interval (rounds "
                           "resampled)"),
    "synced_ci_high": Field("number", "upper end of synced_speedup's 95% interval"),
    "flops": Field("number", "floating-point operations per call (the workload's count)"),
    "gflops": Field("number", "flops / median_s / 1e9"),
    "max_abs_err": Field("number", "largest absolute error against the float64 reference"),
    "max_rel_err": Field("number", "largest relative error against the float64 reference"),
    "max_abs_err_vs_nojit": Field("number", "largest absolute difference to the JIT-off mode"),
    "max_rel_err_vs_nojit": Field("number", "largest relative difference to the JIT-off mode"),
    "norm_rel_err": Field("number", "normwise error against the float64 reference: "
                          "||out - ref|| / ||ref||"),
    "matmul_precision": Field("text", "what the row's matrix products ran at: float64, "
                              "float32, or tf32 (float32 on a GPU's tensor cores, 10-bit "
                              "mantissas; the frameworks' default on compute capability 8.0 "
                              "and later); the output check follows it"),
    "rtol": Field("number", "relative tolerance of the reference check"),
    "atol": Field("number", "absolute tolerance of the reference check"),
    "interleaved_with": Field("texts", "the modes timed sample by sample beside this one"),
    "aa_samples": Field("seconds list", "the A/A control's samples (this mode built again) [s]"),
    "aa_median_s": Field("seconds", "median of the A/A control's samples [s]"),
    "early_calls_s": Field("seconds list", "the calls right after the first [s]"),
    "verdict": Field("text", "this JIT mode against verdict_baseline (its nearest JIT-off "
                     "mode), from the blocks: faster | slower | same | unresolved"),
    "verdict_baseline": Field("text", "the JIT-off mode the verdict is against"),
    "verdict_speedup": Field("number", "baseline time / this mode's time, from the blocks"),
    "verdict_ci_low": Field("number", "lower end of verdict_speedup's interval"),
    "verdict_ci_high": Field("number", "upper end of verdict_speedup's interval"),
    "aa_verdict": Field("text", "the A/A control's verdict (identical programs): same or "
                        "unresolved, unless the noise floor is wider than it says"),
    "aa_verdict_speedup": Field("number", "this mode / its A/A control, from the blocks"),
    "aa_verdict_ci_low": Field("number", "lower end of aa_verdict_speedup's interval"),
    "aa_verdict_ci_high": Field("number", "upper end of aa_verdict_speedup's interval"),
}

# Fields only some rows carry, by family: each documented, none checked on reading.
FAMILIES: dict[str, str] = {
    r"(first|warmup|samples)_(compiles|traces|compile_s|trace_s|lower_s)":
        "the framework's own counters in that phase (first call, warm-up, timed samples): "
        "compilations, traces, and the seconds they took",
    r"(first|warmup|samples)_(clusters|clustered_nodes|graph_nodes)":
        "TF auto-clustering in that phase: XLA clusters formed, the nodes inside them, all nodes",
    r"(first|warm)_cache_(hits|misses|retrieval_s)|cache_(hits|misses|retrieval_s)":
        "the persistent compilation cache (--compile-cache): hits, misses, seconds reading it",
    r"warm_.+": "the same field measured again by the warm compile-cache pass (fresh worker)",
    r"alone_(median_s|samples|again_samples|error)":
        "the interference check: the mode's two blocks measured alone after the interleaved "
        "phase [s], or why they failed",
    r"interference(_shared|_noise|_flag)?":
        "interleaved / alone for this mode (the drift all modes shared taken out), that shared "
        "drift, the blocks' own noise, and whether the mode was flagged",
    r"aa_(ratio|pairing|error)":
        "the A/A control on the row of the mode it repeats: this mode's median / the "
        "control's, how they were paired, or why the control failed",
    r"(aa_)?verdict_(blocks|rounds|s)":
        "how the verdict was reached: blocks of the JIT mode (its units), rounds of blocks, "
        "seconds of sampling until it was known (jitbench.protocol.sequential)",
    r"hlo_.+": "facts of the optimized HLO XLA built (programs, kernels, fusions, fingerprint, "
               "files under the run folder; jitbench.xla.hlo_text)",
    r"xla_.+": "XLA's cost analysis of the compiled program (flops, bytes, intensity) and how "
               "its flop count compares with the workload's",
}
OTHER_FIELDS: dict[str, str] = {
    "worker_pid": "the worker process that measured the row",
    "pair_verdicts": "this JIT mode against each JIT-off mode other than verdict_baseline (TF "
                     "xla against eager), from the same blocks when sampling ended: {baseline: "
                     "{verdict, speedup, ci_low, ci_high, blocks}}",
    "ab_arm": "in a `jitbench ab` run: the arm whose processes measured the row (a or b)",
    "ab_round": "in a `jitbench ab` run: the round (0, 1, ...); each round starts fresh "
                "processes of both arms, A first in even rounds, B first in odd ones",
    "started_at": "when the group started (Unix time)",
    "finished_at": "when the row was written (Unix time)",
    "peak_mem_bytes": "peak device memory during one call of the mode alone, where the "
                      "framework can restart its peak (TensorFlow on a GPU)",
    "peak_mem_added_bytes": "peak_mem_bytes above what was in use when that call began "
                            "(the inputs, kept outputs and variables every mode shares)",
    "peak_mem_ratio_vs_nojit": "peak_mem_added_bytes / that of the JIT-off mode",
    "process_peak_mem_bytes": "the worker process's peak device memory after the group (JAX, "
                              "whose peak never resets): a high-water mark of everything the "
                              "worker ran, not the mode's own (see compiled_memory_bytes)",
    "synced_vs_pipelined": "synced_speedup / the pipelined verdict_speedup: far below 1 where "
                           "dispatch dominates a synced call (JIT saves host time there)",
    "synced_error": "why the synced calls stopped (the pipelined samples stand)",
    "gpu_sm_clock_mhz_start": "the GPU's SM clock before the group (NVML or nvidia-smi) [MHz]",
    "gpu_sm_clock_mhz_end": "the GPU's SM clock after the group's samples [MHz]",
    "gpu_mem_clock_mhz": "the GPU's memory clock after the group's samples [MHz]",
    "gpu_temperature_c_start": "the GPU's temperature before the group [C]",
    "gpu_temperature_c_end": "the GPU's temperature after the group's samples [C]",
    "gpu_power_w": "the GPU's power draw after the group's samples [W]",
    "gpu_utilization_pct": "the GPU's utilisation as the driver last sampled it [%]",
    "gpu_throttled": "the SM clock fell more than 10% during the group, or the driver reported a "
                     "thermal, power or hardware slowdown: its times are suspect",
    "gpu_throttle_note": "what gpu_throttled saw",
    "compiled_memory_bytes": "XLA's memory analysis of the mode's compiled program: the bytes "
                             "its arguments, outputs, temporaries and generated code take on "
                             "the device (the largest program of a call; JAX JIT modes, every "
                             "device); the mode's own memory, unlike the process-wide peak",
    "warmup_calls": "calls made to warm up after the first",
    "warmup_s": "seconds spent warming up",
    "settled": "whether warm-up ended because times settled (not on its time limit)",
    "loops": "calls per timed sample (short calls are batched)",
    "sync_overhead_s": "the cost of one device sync, measured [s]",
    "pipeline_gap_s": "a call alone, synced, minus its share of calls back to back: the "
                      "dispatch a loop hides, which sets how many calls a sample batches [s]",
    "cpu_steal_pct": "CPU steal while the group ran [%]",
    "cpu_busy_pct": "CPU busy while the group ran [%]",
    "loadavg_1m": "the machine's 1-minute load average",
    "compiling_samples": "timed samples during which something compiled (set apart)",
    "steady_state_compiles": "whether the mode kept compiling after warm-up",
    "nojit_mode": "the JIT-off mode this row's output was compared with",
    "state": "a user's function with state (TF variables it assigns: a Keras model and its "
             "optimizer): how many variables were saved before the first call; every mode is "
             "checked after one step from them, and they are put back at the end (or why no "
             "state could be found)",
    "unwrapped": "a user's function that came already jitted: the decorator taken off "
                 "(jax.jit, tf.function) so that every mode starts from the undecorated "
                 "function",
    "static_argnums": "a user's function: the argument positions passed as static (JAX "
                      "compiles once per value there), the jax.jit's own or, for an "
                      "undecorated function, the arguments that hold no array",
    "keras_auto": "a Keras model: what compile(jit_compile='auto') resolves to on this machine, "
                  "and why (TensorFlow on a CPU-only machine, a layer without XLA support, "
                  "a distribute strategy, op determinism)",
    "keras_jit_compile": "a Keras model: what fit runs it with as it was compiled "
                         "(jit_compile=True/False, or run_eagerly=True)",
    "donation_held": "a user's function measured with donate=K, its donate mode: how many of "
                     "the donated argument's buffers XLA reused on the first call ('N of M'; "
                     "fewer than all: JAX could not use the rest and warned)",
    "keras_fit": "a Keras model measured with batch_size: the epoch of fit run per mode "
                 "(batch size, steps, and a ragged last batch)",
    "keras_steps_per_execution": "a Keras model compiled with steps_per_execution=K > 1: K, "
                                 "the steps fit runs per call of its train function (the "
                                 "step rows time one step per call; keras_fit's epoch runs "
                                 "K per call)",
    "keras_fit_traces": "a Keras model measured with batch_size: how many times fit traced the "
                        "training step in one epoch in this mode (a ragged last batch: a second "
                        "trace on JAX; on TensorFlow the batch dimension is left unknown); "
                        "absent for eager",
    "keras_fit_epoch_s": "a Keras model measured with batch_size: the wall time of that epoch "
                         "of fit in this mode, traces and compiles included",
    "keras_fit_step_s": "a Keras model: what a step costs inside fit's own loop in this mode "
                        "(its iterator, input pipeline, train function and callbacks, "
                        "verbose=0): the median of keras_fit_step_samples_s; the step alone "
                        "is the row's median_s",
    "keras_fit_step_samples_s": "a Keras model: each epoch of fit timed in this mode (epoch "
                                "begin to end, as a callback times it; each mode's first "
                                "epoch, its trace and compile, left out), over its steps [s]",
    "keras_fit_timed": "a Keras model: the epochs of fit timed per mode (x, y one batch: that "
                       "batch repeated into an epoch; with batch_size the dataset), fit's "
                       "settings, and how many epochs and calls of fit were timed",
    "keras_fit_epoch_fixed_s": "a Keras model: the part of an epoch of fit that is not its "
                               "steps (a new iterator, the call that finds it empty, the "
                               "epoch's metrics), median over the timed epochs; fit pays it "
                               "once an epoch, so it weighs less per step in a longer epoch",
    "keras_fit_loop_s": "a Keras model: keras_fit_step_s minus median_s: what fit's own loop, "
                        "input pipeline and callbacks add to each step in this mode",
    "keras_fit_speedup": "a Keras model, its JIT-on modes: the nearest JIT-off mode's "
                         "keras_fit_step_s over this mode's (above 1: faster as fit runs "
                         "them); the summary's first sentence. It, its interval and its "
                         "verdict are absent where this mode's row or the JIT-off one's is "
                         "not ok",
    "keras_fit_ci_low": "lower end of keras_fit_speedup's 95% bootstrap interval (the modes' "
                        "timed epochs)",
    "keras_fit_ci_high": "upper end of keras_fit_speedup's 95% bootstrap interval",
    "keras_fit_verdict": "keras_fit_speedup judged: faster, slower, no difference (inside its "
                         "interval or +-2%), unresolved (a single epoch on a side)",
    "keras_fit_error": "a Keras model: why fit was not timed in this mode (fit raised, or Keras "
                       "runs the model otherwise than the mode asks: jit_compile=True refused "
                       "for a layer)",
    "keras_backend": "a Keras model on the JAX backend: jax (its stateless train_step(state, "
                     "(x, y)) measured in JAX's modes); absent on the TensorFlow backend",
    "keras_no_jit_layers": "a Keras model: the layers that declare supports_jit=False (Keras "
                           "would run without XLA where jit_compile=True was asked)",
    "check_skipped": "why no output of the group was checked: its JIT-off mode answered "
                     "differently when called again from the same start (state that cannot "
                     "be saved, unseeded random numbers)",
    "recompile_reasons": "why the framework compiled again after the first call",
    "insight_s": "seconds spent reading what XLA built (after the samples)",
    "cost_note": "why XLA's cost analysis is missing or partial",
    "jit_happened": "False where the framework compiled nothing (TF auto-clustering, no "
                    "cluster): the same program as the baseline",
    "failing_op": "the op or graph node a failure message names",
    "retried_after": "why the row was measured again in a fresh worker",
    "worker_exit": "the exit status of a worker that died",
    "worker_signal": "the signal that killed the worker (e.g. SIGSEGV)",
    "profile_files": "the profiler trace's files under the run folder (--profile)",
    "clusters_formed": "TF auto-clustering: how many XLA clusters the first calls formed",
}


def documented(name: str) -> bool:
    """Whether the docs (the result-columns page) say what field ``name`` means."""
    return (name in FIELDS or name in OTHER_FIELDS
            or any(re.fullmatch(p, name) for p in FAMILIES))


def columns_markdown() -> str:
    """The result-columns page of the docs, from :data:`FIELDS`, :data:`OTHER_FIELDS` and
    :data:`FAMILIES` (generated at build time: it cannot drift from the code)."""
    out = ["# Result columns", "",
           f"Every row of `results.jsonl` (`schema_version` {SCHEMA_VERSION}) and every column "
           "of `jitbench.load_results`. Generated from `bench/results/fields.py`.", "",
           "## Fields every reader relies on", "",
           "Checked when a run is read: a field of the wrong kind reads as missing, with a "
           "warning naming the file and line.", "", "| field | kind | meaning |", "|---|---|---|"]
    out += [f"| `{n}` | {f.kind} | {f.doc} |" for n, f in FIELDS.items()]
    out += ["", "## Fields some rows carry", "", "| field | meaning |", "|---|---|"]
    out += [f"| `{n}` | {d} |" for n, d in sorted(OTHER_FIELDS.items())]
    out += ["", "## Families of fields", "", "| fields (pattern) | meaning |", "|---|---|"]
    # not a code span: there a table's escaped "|" would show its backslash
    out += [f"| {p.replace('|', chr(92) + '|').replace('_', chr(92) + '_')} | {d} |"
            for p, d in FAMILIES.items()]
    return "\n".join(out) + "\n"


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _seconds(v) -> bool:
    return _number(v) and MIN_SECONDS <= v < MAX_SECONDS


# a duration outside these is damage, not a measurement: no timer resolves a picosecond (a
# sample is the mean of a batch of calls, never below ~1 ns), no call lasts 11 days
MIN_SECONDS, MAX_SECONDS = 1e-12, 1e6
_KINDS = {
    "text": lambda v: v is None or isinstance(v, str),
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
        ok = isinstance(out[name], str) if name in IDENTITY else _KINDS[field.kind](out[name])
        if not ok:
            problems.append(f"{name!r} is {type(out[name]).__name__} {str(out[name])[:40]!r}, "
                            f"not {field.kind}")
            out[name] = "?" if name in IDENTITY else None
    if not isinstance(out.get("case_id"), str):
        out["case_id"] = "-".join(str(out[k]) for k in ("workload", "variant", "framework",
                                                         "mode", "device", "dtype", "size"))
    if out["status"] not in STATUSES:
        problems.append(f"status {out['status']!r} is none of {', '.join(STATUSES)}")
    return out, problems
