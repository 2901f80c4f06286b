"""``jitbench.measure``: what JIT does to your own function, from a notebook or a script.

    import jitbench
    r = jitbench.measure(loss_fn, x, y, modes=["eager", "jit"])   # framework from the inputs
    r.summary()   # 'jit is 12.3× faster than eager [11.8–12.9] (pipelined; each call synced:
                  #  3.1× [2.9–3.3]); compile 210 ms; pays off ...'
    r.table()     # the columns of jitbench.load_results, one row per mode
    r.verdict("jit")   # 'faster' (slower, same, unresolved): what a test asserts on
    r.speedup("jit")   # Speedup(mode='jit', baseline='eager', ratio=12.3, low=11.8, ...)
    r             # in Jupyter: the summary and a small table

In-process by default, so its limits are the process's: TF auto-clustering on CPU needs
``TF_XLA_FLAGS=--tf_xla_cpu_global_jit`` before TensorFlow starts (skipped where TensorFlow
already ran without it, with that reason), TensorFlow's compile counters need its log (left
out), and a crash of the function is a crash of the session. ``isolate=True`` measures in
worker processes instead (one per environment the modes need): all of that works there, for a
function importable as ``module:qualname``.
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol
from jitbench.userfn.options import Sampling, Tolerances, check_options, option_objects

SUMMARY_COLUMNS = ["mode", "jit", "status", "first_call_s", "median_s", "iqr_s", "n_samples",
                   "max_rel_err_vs_nojit", "error"]


@dataclasses.dataclass(frozen=True)
class Speedup:
    """One JIT-on mode against a JIT-off one, from ``Result.speedup``: ``ratio`` (the
    baseline's time over the mode's: above 1 is faster), its 95% interval ``low`` to
    ``high``, and the ``verdict``: "faster", "slower", "same" (inside the +-5% band) or
    "unresolved" (the budget ran out first); "no difference" where the fixed protocol
    (``precision="off"``) judged it from a bootstrap, "no JIT happened" where the mode
    compiled nothing. ``timed`` says what was timed: ``"call"`` (the function, or a Keras
    model's ``train_step`` alone, called step after step) or ``"fit"`` (a Keras model as
    ``model.fit`` runs it, timed per epoch; a bootstrap's verdict: ``"no difference"``, not
    ``"same"``, and ``"unresolved"`` with one epoch timed on a side)."""

    mode: str
    baseline: str
    ratio: float
    low: float
    high: float
    verdict: str
    timed: str = "call"


def _state(row: dict[str, Any]) -> str:
    """A row that is not ok, for an error message: its status and the start of its error,
    the parenthesis left open for the caller to add to and close."""
    return f"{row.get('status')} ({str(row.get('error') or '').strip()[:300]}"


def _in_fit(row: dict[str, Any]) -> bool:
    """A Keras model's mode that ``fit`` ran (or tried to): its row has ``fit``'s figures."""
    return "keras_fit_step_s" in row or "keras_fit_error" in row


class Result:
    """Rows of one ``jitbench.measure`` call (one per mode), with the report's statistics."""

    def __init__(self, rows: list[dict[str, Any]], run_id: str = "measure"):
        from jitbench.results.row import stamp
        from jitbench.userfn.keras_fit import with_fit_fields

        self.rows = with_fit_fields([stamp(r, r.get("run_id") or run_id) for r in rows])

    def table(self):
        """A pandas DataFrame with the columns of ``jitbench.load_results``."""
        from jitbench.results.files import to_frame

        return to_frame(self.rows)

    def speedups(self):
        """``jitbench.analysis.speedups`` of the table: every JIT-on mode against every JIT-off one,
        with the bootstrap interval and break-even calls."""
        from jitbench import analysis

        return analysis.speedups(self.table())

    def speedup(self, mode: str, against: str | None = None, *,
                step_alone: bool = False) -> Speedup:
        """``mode`` against ``against`` (default: its nearest JIT-off mode, the one the
        summary names): the figures the summary shows first. For a Keras model, a mode that
        ``fit`` runs (TensorFlow's xla, the JAX backend's jit) answers as ``fit`` runs it,
        against the nearest JIT-off mode alone (``timed="fit"``); ``step_alone=True`` gives its
        ``train_step`` alone, from :meth:`speedups` as for any function (``timed="call"``), as
        a mode ``fit`` has not (aot) always does. Raises ``jitbench.UserError`` naming the
        valid modes for a mode not measured here (or a JIT-off one), and saying why for a mode
        whose row is not ``ok``, or whose ``fit`` (or its baseline's) failed or was not run."""
        from jitbench.define.modes import MODES

        jit_modes = [r["mode"] for r in self.rows if MODES.get((r["framework"], r["mode"]))
                     and MODES[(r["framework"], r["mode"])].jit]
        row = next((r for r in self.rows if r["mode"] == mode), None)
        if row is None or mode not in jit_modes:
            what = "a JIT-off mode (a baseline)" if row is not None else "not measured here"
            raise UserError(f"mode {mode!r} is {what}; valid: {', '.join(jit_modes) or 'none'}"
                            f" (JIT-on modes of this result)")
        if row.get("status") != "ok":
            raise UserError(f"{mode} has no speedup: its row is {_state(row)})")
        if not step_alone and _in_fit(row):
            return self._fit_speedup(row, against)
        sp = self.speedups()
        found = sp[sp["mode"] == mode] if len(sp) else sp
        if against is not None:
            found = found[found["baseline"] == against] if len(found) else found
        if not len(found):
            bases = sorted({r["mode"] for r in self.rows} - set(jit_modes))
            raise UserError(f"{mode} has no speedup against "
                            f"{against or 'a JIT-off mode'}: none measured ok beside it "
                            f"(JIT-off modes here: {', '.join(bases) or 'none'})")
        r = found.sort_values("nearest", ascending=False, kind="stable").iloc[0]
        return Speedup(mode, str(r["baseline"]), float(r["speedup"]), float(r["ci_low"]),
                       float(r["ci_high"]), str(r["verdict"]))

    def _fit_speedup(self, row: dict[str, Any], against: str | None) -> Speedup:
        """A Keras mode's speedup as ``fit`` runs them (:meth:`speedup`)."""
        from jitbench.define.modes import nearest_baseline

        mode, base = row["mode"], nearest_baseline(row["framework"])
        alone = "step_alone=True: the train_step alone"
        if against not in (None, base):
            raise UserError(f"{mode} is compared with {base} as fit runs them, not with "
                            f"{against} ({alone}, against any JIT-off mode)")
        if row.get("keras_fit_error"):
            raise UserError(f"{mode} has no speedup as fit runs it: {row['keras_fit_error']} "
                            f"({alone})")
        other = next((r for r in self.rows if r["mode"] == base), None)
        if other is not None and other.get("status") != "ok":
            raise UserError(f"{mode} has no speedup as fit runs it: {base}'s row is "
                            f"{_state(other)}; {alone})")
        if other is None or not isinstance(other.get("keras_fit_step_s"), float):
            why = (other or {}).get("keras_fit_error") or "not timed in fit (not measured)"
            raise UserError(f"{mode} has no speedup as fit runs it: {base} in fit: {why} "
                            f"({alone})")
        if not isinstance(row.get("keras_fit_speedup"), float):
            raise UserError(f"{mode} has no speedup as fit runs it ({alone})")
        return Speedup(mode, base, row["keras_fit_speedup"], row["keras_fit_ci_low"],
                       row["keras_fit_ci_high"], row["keras_fit_verdict"], timed="fit")

    def verdict(self, mode: str, against: str | None = None, *,
                step_alone: bool = False) -> str:
        """``speedup(mode, against, step_alone=...).verdict``: what a test asserts on
        (``assert r.verdict("jit") == "faster"``)."""
        return self.speedup(mode, against, step_alone=step_alone).verdict

    def summary(self) -> str:
        """One sentence per JIT-on mode against its nearest JIT-off mode, then any failures."""
        from jitbench import analysis
        from jitbench.report import fmt
        from jitbench.userfn.keras_fit import fit_sentences

        sp = self.speedups()
        by_mode = {row["mode"]: row for row in self.rows}
        parts = fit_sentences(self.rows)  # a Keras model: as fit runs it first, the step after
        alone = "train_step alone: " if parts else ""
        # each JIT-on mode against its nearest JIT-off mode, or the one measured beside it
        chosen = (sp.sort_values("nearest", ascending=False, kind="stable")
                  .drop_duplicates("mode") if len(sp) else sp)
        for r in chosen.to_dict("records") if len(sp) else []:
            ratio, lo, hi = r["speedup"], r["ci_low"], r["ci_high"]
            if r["verdict"] == analysis.NO_JIT:
                head = (f"{r['mode']}: {r['verdict']} ({fmt.times(ratio)} "
                        f"{fmt.interval(lo, hi)} against {r['baseline']})")
            elif r["verdict"] == "slower":
                head = (f"{r['mode']} is {fmt.times(1 / ratio)} slower than {r['baseline']} "
                        f"{fmt.interval(1 / hi, 1 / lo)}")
            elif r["verdict"] == "faster":
                head = (f"{r['mode']} is {fmt.times(ratio)} faster than {r['baseline']} "
                        f"{fmt.interval(lo, hi)}")
            elif r["verdict"] == "same":
                head = (f"{r['mode']} runs as fast as {r['baseline']} ({fmt.times(ratio)} "
                        f"{fmt.interval(lo, hi)}, inside the +-5% band)")
            elif r["verdict"] == "unresolved":
                head = (f"{r['mode']} against {r['baseline']}: unresolved ({fmt.times(ratio)} "
                        f"{fmt.interval(lo, hi)}; a longer budget may tell)")
            else:
                head = (f"{r['mode']} is no faster than {r['baseline']} ({fmt.times(ratio)} "
                        f"{fmt.interval(lo, hi)}, within the noise)")
            text = alone + head
            synced = by_mode.get(r["mode"], {})
            if (isinstance(synced.get("synced_speedup"), float)
                    and r["verdict"] != analysis.NO_JIT):
                ci = fmt.interval(synced.get("synced_ci_low"), synced.get("synced_ci_high"))
                text += (f" (pipelined; each call synced: "
                         f"{fmt.times(synced['synced_speedup'])} {ci})")
            text += f"; compile {fmt.secs(max(r['compile_cost_s'], 0.0))}"
            be = r["break_even_calls"]
            if isinstance(be, float) and math.isinf(be):
                text += "; never pays off"
            elif isinstance(be, (int, float)) and not math.isnan(be):
                text += f"; pays off after {fmt.calls(be)}"
            parts.append(text)
        measured = {r["mode"] for r in sp.to_dict("records")} if len(sp) else set()
        for row in self.rows:
            if row.get("status") == "ok" and row.get("jit") and row["mode"] not in measured:
                parts.append(f"{row['mode']}: {fmt.secs(row.get('median_s'))} per call, "
                             f"first call {fmt.secs(row.get('first_call_s'))} (no JIT-off "
                             f"mode measured to compare with)")
            elif row.get("status") not in ("ok", None):
                lines = [ln.strip() for ln in str(row.get("error") or "").splitlines()
                         if ln.strip()]
                if lines and lines[0] == "in user code:":  # TF's trace: its last line says it
                    lines = lines[-1:]
                kind = f"{row['error_type']}: " if row.get("error_type") else ""
                why = f" ({kind}{lines[0][:200]})" if lines else ""
                parts.append(f"{row['mode']} {row['status']}{why}")
        skipped = next((r["check_skipped"] for r in self.rows if r.get("check_skipped")), None)
        if skipped:
            parts.append(f"outputs not checked: {skipped}")
        first = self.rows[0] if self.rows else {}
        if first.get("unwrapped"):  # said first: every figure above is of the undecorated fn
            parts.insert(0, f"measured {first.get('workload')} as it was before "
                            f"{first['unwrapped']}, so its JIT-off modes run without JIT")
        if first.get("keras_auto"):
            parts.append(f"Keras: fit runs this model with {first.get('keras_jit_compile')}; "
                         f"jit_compile='auto' is {first['keras_auto']}")
        if first.get("keras_steps_per_execution"):
            parts.append(f"Keras: fit runs {first['keras_steps_per_execution']} steps per "
                         f"call (steps_per_execution); the rows above time one step per call")
        fits = [r for r in self.rows if r.get("keras_fit")]
        if fits:
            parts.append(f"one epoch of fit per mode ({fits[0]['keras_fit']}): " + "; ".join(
                f"{r['mode']} " + (f"{r['keras_fit_traces']} trace(s), "
                                   if "keras_fit_traces" in r else "")
                + fmt.secs(r["keras_fit_epoch_s"]) for r in fits))
        held = next((r["donation_held"] for r in self.rows if r.get("donation_held")), None)
        if held:
            parts.append(f"donate: XLA reused {held} of the donated state's buffers")
        if first.get("static_argnums"):
            parts.append(f"arguments {first['static_argnums']} passed as static (compiled "
                         f"for their values)")
        return ". ".join(parts) if parts else "nothing measured"

    def __repr__(self) -> str:
        return f"<jitbench.Result: {self.summary()}>"

    def _repr_html_(self) -> str:
        df = self.table()
        cols = [c for c in SUMMARY_COLUMNS if c in df.columns]
        table = df[cols].to_html(index=False, na_rep="–", float_format=lambda v: f"{v:.4g}")
        return f"<p>{html.escape(self.summary())}</p>\n{table}"


def measure(fn, /, *args, modes: Sequence[str] | None = None, framework: str | None = None,
            reference=None, tolerances: Tolerances | None = None, flops: float | None = None,
            device: str | None = None, name: str | None = None, isolate: bool = False,
            protocol: Protocol | None = None, sampling: Sampling | None = None,
            timeout: float | None = None, donate: int | None = None,
            batch_size: int | None = None, kwargs: Mapping[str, Any] | None = None,
            rtol: float | None = None, atol: float | None = None,
            precision: float | str | None = None, budget: float | None = None,
            **keywords) -> Result:
    """Measure ``fn(*args, **keywords)`` in every requested JIT mode with jitbench's protocol.

    - Keyword arguments other than the options below go to ``fn`` as they came
      (``measure(power_iteration, a, v, n_iter=30)``): one holding arrays is an input like a
      positional one; one holding none is static, and a jitted function keeps its own
      ``static_argnames``. ``kwargs={...}``: the function's keyword arguments as a dict, for
      one whose name is also an option here (``kwargs={"name": ...}``); a keyword that is
      both without ``kwargs`` raises ``UserError`` naming it.

    - ``modes``: e.g. ``["eager", "jit"]`` (JAX) or ``["graph", "xla"]`` (TF); default: every
      mode that can run here (all of the framework's with ``isolate=True``).
    - ``framework``: "tf" or "jax"; by default told from the inputs (needed for numpy inputs).
    - ``reference``: the expected output, or a function computing it from float64 numpy copies
      of the inputs; every mode is checked against it. JIT-on outputs are always checked
      against the JIT-off output.
    - ``tolerances``: a ``jitbench.Tolerances(rtol=, atol=)`` for those checks (default: by
      dtype); ``rtol=``, ``atol=`` are shorthand for it.
    - ``flops``: work of one call, for GFLOP/s. ``device``: "cpu" or "gpu" (default: gpu where
      the framework sees one). ``protocol``: a ``jitbench.protocol.settings.Protocol`` (time
      per mode, ...).
    - ``sampling``: a ``jitbench.Sampling(precision=, budget=)``, overriding ``protocol``'s:
      sample until each JIT mode's verdict against its nearest JIT-off mode is known to
      +-``precision`` (default 0.05), or ``precision="off"``: the fixed protocol
      (``protocol``'s ``min_time`` per mode); ``budget``: seconds of interleaved sampling, at
      most (default 6). ``precision=``, ``budget=`` are shorthand for it.
    - ``donate``: the position of an argument the function returns anew (a training step's
      state): it is measured as a training loop calls it, the new value carried from call to
      call, and the ``donate`` mode (``jax.jit(fn, donate_argnums=donate)``) runs beside the
      others; its row says how many of the state's buffers XLA reused (``donation_held``).
      JAX only, in this process.
    - ``batch_size``: with a compiled Keras model, ``x, y`` are a dataset as ``fit`` gets it:
      the step is measured on its first batch, and one epoch of ``fit`` per mode counts the
      step's traces (a ragged last batch: a second one on JAX) and its time (``keras_fit_traces``,
      ``keras_fit_epoch_s``); the model is put back as it came.
    - ``isolate=True``: measure in worker processes (see the module docstring).
      ``timeout``: seconds each worker may take to start and to measure (default 1800); a
      function that outlasts it comes back as ``timeout`` rows, its worker killed. In this
      process nothing can stop a function that hangs: ``timeout`` needs ``isolate=True``.

    Raises ``jitbench.UserError`` naming the problem: inputs of mixed frameworks, an unknown mode,
    a function that fails with JIT off, a shorthand given beside its object (``rtol=`` with
    ``tolerances=``). A mode that fails only with JIT on is a row of the result (its status and
    error), never an exception.
    """
    from jitbench.userfn.arguments import given_options, keyword_arguments
    from jitbench.userfn.as_workload import prepare, run

    # read before any option is reassigned: which of them the caller set
    kwargs = keyword_arguments(fn, args, keywords, kwargs, given_options(measure, locals()),
                               OPTIONS, "jitbench.measure")
    tolerances, sampling = option_objects(tolerances, sampling, rtol=rtol, atol=atol,
                                          precision=precision, budget=budget)
    protocol = sampling.applied_to(protocol or Protocol())
    check_options(isolate, timeout, donate, batch_size)
    if isolate:
        from jitbench.userfn.isolate import measure_isolated

        return Result(measure_isolated(fn, args, modes=modes, framework=framework,
                                       reference=reference, tolerances=tolerances, flops=flops,
                                       device=device, name=name, protocol=protocol,
                                       timeout=timeout, kwargs=kwargs))
    spec = prepare(fn, args, framework=framework, modes=modes, reference=reference,
                   tolerances=tolerances, flops=flops, device=device, name=name, donate=donate,
                   batch_size=batch_size, kwargs=kwargs)
    for mode, why in spec.skipped.items():
        spec.skipped[mode] = f"{why}; jitbench.measure(..., isolate=True) gives it one"
    return Result(run(spec, protocol))


# measure's own options: a keyword of the user's function is every other name
OPTIONS = tuple(name for name, p in inspect.signature(measure).parameters.items()
                if p.kind is p.KEYWORD_ONLY)
