"""A compiled Keras model's ``fit`` timed per epoch in each mode, beside its training step.

The rows of ``jitbench.measure(model, x, y)`` time the training step alone
(``jitbench.userfn.keras_model``). What a step costs as ``fit`` runs it is more: fit's own loop,
its input pipeline (``tf.data`` on TensorFlow), the train function it builds around the step
(``make_train_function``, with the model's ``steps_per_execution``) and its callbacks.
:func:`fit_epochs` runs ``model.fit`` itself in each mode and times it per epoch, as a user
would: ``keras_fit_step_s`` per mode, the xla-over-graph speedup as ``fit`` runs them on the
JIT-on rows (the summary's first sentence, :func:`fit_sentences`), and, once the rows are
measured, ``keras_fit_loop_s``: the fit step minus the step alone (:func:`with_fit_fields`).
``x, y`` is one batch, repeated into an epoch; with ``batch_size``
(``jitbench.measure(model, x, y, batch_size=32)``) it is the dataset as ``fit`` gets it: the
step alone is measured on its first batch, fit's epochs are the dataset's, and each mode's
first epoch counts the traces of the training step (its Python body runs once per trace
under ``tf.function`` or ``jax.jit``; a ragged last batch is a second trace on JAX, while
TensorFlow's data pipeline leaves the batch dimension unknown and XLA compiles the new shape
underneath). The model's variables and settings are put back after.

Nothing here imports Keras or TensorFlow until a Keras model is passed.
"""

from __future__ import annotations

from typing import Any

from jitbench.userfn.keras_model import first_batch, steps_per_execution

# fit timed per epoch (fit_epochs): the epoch, how many are timed, and for how long
FIT_STEPS = 64  # x, y one batch: an epoch of that batch this many times (fewer past FIT_BYTES)
FIT_BYTES = 256 << 20  # the repeated batch's epoch holds at most this many bytes (2 steps at least)
FIT_MAX_STEPS = 128  # a dataset (batch_size): its epochs timed over its first batches, at most
FIT_EPOCHS = 8  # timed epochs per mode, at most (after its first, which traces and compiles)
FIT_MODE_S = 1.0  # a mode stops once its timed epochs add up to this (one epoch timed at least)


def fit_epochs(model, args: tuple, batch_size: int | None, modes) -> dict[str, dict[str, Any]]:
    """Per mode of ``modes`` that ``fit`` has (``KERAS_FIT``, ``KERAS_JAX_FIT``): ``model.fit``
    with the mode's settings (as ``compile()`` would set them), timed per epoch: what a step
    costs inside fit's own loop and input pipeline.

    - The epoch: with ``batch_size``, ``x, y`` is the dataset as ``fit`` gets it, its epochs
      timed over its first ``FIT_MAX_STEPS`` batches at most; without, ``x, y`` is one batch
      and the epoch is that batch ``FIT_STEPS`` times (fewer past ``FIT_BYTES``) at
      ``batch_size=len(x)``. ``fit``'s defaults otherwise (``shuffle=True``), ``verbose=0``,
      the model's ``steps_per_execution``.
    - Each mode's first epoch (its trace and compile) is not timed. With ``batch_size`` it is an
      epoch of the whole dataset: its traces of the training step are counted
      (``keras_fit_traces``; not for eager, whose step runs as Python every time) and its wall
      time kept (``keras_fit_epoch_s``), with what it ran (``keras_fit``).
    - Then the modes take turns (the order reversed each round), each one call of ``fit`` of one
      or two epochs from the saved state, until a mode has ``FIT_EPOCHS`` epochs or
      ``FIT_MODE_S`` seconds of them: ``keras_fit_step_s`` (the median epoch's time per step),
      each epoch's (``keras_fit_step_samples_s``), the part of an epoch that is not its steps
      (``keras_fit_epoch_fixed_s``), what was timed (``keras_fit_timed``) and, for a JIT-on
      mode, its speedup over the nearest JIT-off one as ``fit`` runs them, with a 95% interval
      (``keras_fit_speedup``, ``keras_fit_ci_low``, ``keras_fit_ci_high``,
      ``keras_fit_verdict``).

    A mode whose ``fit`` fails, or that Keras will not run as asked (``jit_compile=True`` refused
    for a layer), has ``keras_fit_error`` instead. The model's weights, optimizer and metric
    state and its settings are put back after."""
    import time

    import keras
    from jitbench.frameworks.jax_modes import KERAS_JAX_FIT
    from jitbench.frameworks.tf_modes import KERAS_FIT

    settings = {"tensorflow": KERAS_FIT, "jax": KERAS_JAX_FIT}.get(keras.backend.backend(), {})
    wanted = [m for m in modes if m in settings]
    if not wanted:
        return {}
    per_call = steps_per_execution(model)
    plan = FitPlan.of(args, batch_size, per_call)
    model._symbolic_build(data_batch=plan.first)  # optimizer slots first
    variables = [*model.weights, *model.optimizer.variables, *model.metrics_variables]
    saved = [keras.ops.convert_to_numpy(v.value) for v in variables]
    was = {"run_eagerly": model.run_eagerly, "jit_compile": model.jit_compile}
    traces = 0
    step = model.train_step

    def counted(*a, **k):
        nonlocal traces
        traces += 1
        return step(*a, **k)

    def fit(mode: str, data: tuple, epochs: int, timer=None) -> None:
        for v, value in zip(variables, saved):  # every call from the state as it came
            v.assign(value)
        for key, value in settings[mode].items():
            setattr(model, key, value)
        model.train_function = built[mode]
        model.fit(*data, batch_size=plan.batch_size, epochs=epochs, verbose=0,
                  callbacks=[timer] if timer is not None else None)

    out: dict[str, dict[str, Any]] = {mode: {} for mode in wanted}
    built: dict[str, Any] = {}
    model.train_step = counted
    try:
        for mode in wanted:
            refused = _settings_refused(model, settings[mode])
            if refused:
                out[mode]["keras_fit_error"] = refused
                continue
            model.make_train_function(force=True)
            built[mode] = model.train_function
            traces = 0
            began = time.perf_counter()
            try:
                fit(mode, plan.first_epoch, 1)
            except Exception as exc:  # noqa: BLE001 -- the mode's row says why fit failed
                lines = str(exc).strip().splitlines() or [""]
                out[mode]["keras_fit_error"] = f"{type(exc).__name__}: {lines[-1][:300]}"
                del built[mode]
                continue
            if batch_size is not None:
                out[mode].update(keras_fit=plan.first_text,
                                 keras_fit_epoch_s=time.perf_counter() - began)
                if not settings[mode]["run_eagerly"]:  # run eagerly, the step is never traced
                    out[mode]["keras_fit_traces"] = traces
        timed = _take_turns(built, fit, plan)
    finally:
        del model.train_step  # the class's own again
        for key, value in was.items():
            setattr(model, key, value)
        model.train_function = None  # fit builds it again with the model's own settings
        for v, value in zip(variables, saved):
            v.assign(value)
    framework = "jax" if keras.backend.backend() == "jax" else "tf"
    for mode, (per_step, fixed, calls) in timed.items():
        out[mode].update(keras_fit_timed=f"{plan.text}; {_count(len(per_step), 'epoch')} "
                                         f"timed in {_count(calls, 'call')} of fit after the "
                                         f"first",
                         keras_fit_step_s=_median(per_step), keras_fit_step_samples_s=per_step,
                         keras_fit_epoch_fixed_s=_median(fixed))
        out[mode].update(_fit_speedup(framework, mode, timed))
    return {mode: fields for mode, fields in out.items() if fields}


def _settings_refused(model, wanted: dict[str, Any]) -> str | None:
    """Set ``wanted`` on the model; what Keras would not take (``jit_compile=True`` on a model
    with a layer that declares ``supports_jit=False`` stays ``False``), or None."""
    import warnings

    with warnings.catch_warnings():  # Keras's own "Proceeding with jit_compile=False"
        warnings.simplefilter("ignore")
        for key, value in wanted.items():
            setattr(model, key, value)
    off = [f"{k}={getattr(model, k)}" for k, v in wanted.items() if getattr(model, k) != v]
    return (f"Keras runs this model with {', '.join(off)} where the mode asks for "
            f"{', '.join(f'{k}={wanted[k]}' for k in wanted)}" if off else None)


class FitPlan:
    """What ``fit_epochs`` runs: ``first_epoch`` (each mode's first, untimed), ``timed`` (the
    epochs timed), ``batch_size``, ``steps`` (of a timed epoch), ``first`` (one batch: the
    optimizer's slots are built on it), and the texts the rows carry."""

    def __init__(self, first_epoch: tuple, timed: tuple, batch_size: int, steps: int,
                 text: str, first_text: str, first: tuple):
        self.first_epoch, self.timed, self.batch_size, self.steps = (first_epoch, timed,
                                                                      batch_size, steps)
        self.text, self.first_text, self.first = text, first_text, first

    @classmethod
    def of(cls, args: tuple, batch_size: int | None, per_call: int) -> FitPlan:
        import math

        import keras
        import numpy as np

        also = (", shuffled (fit's default), verbose=0"
                + (f", {per_call} steps per call (steps_per_execution)" if per_call > 1 else ""))
        n = _rows(args[0])
        if batch_size is not None:
            steps = math.ceil(n / batch_size)
            last = n - (steps - 1) * batch_size
            first_text = (f"batch_size {batch_size}, {steps} steps"
                          + (f", the last of {last} rows (a new shape)"
                             if last != batch_size else "")
                          + (f", {per_call} per call (steps_per_execution)"
                             if per_call > 1 else ""))
            timed, kept = args, steps
            if steps > FIT_MAX_STEPS:  # a long epoch: timed over its first batches
                kept = FIT_MAX_STEPS
                timed = tuple(keras.tree.map_structure(
                    lambda a: a[:kept * batch_size], part) for part in args)
            text = (f"batch_size {batch_size}, {kept} steps an epoch"
                    + (f" (the first {kept} of {steps} batches)" if kept < steps else "")
                    + also)
            return cls(args, timed, batch_size, kept, text, first_text,
                       first_batch(args, batch_size))
        nbytes = sum(np.asarray(a).nbytes for a in keras.tree.flatten(args) if a is not None)
        copies = max(2, min(FIT_STEPS, FIT_BYTES // max(int(nbytes), 1)))
        epoch = tuple(keras.tree.map_structure(
            lambda a: np.concatenate([np.asarray(a)] * copies), part) for part in args)
        text = (f"the batch given ({n} rows) {copies} times: {copies} steps an epoch at "
                f"batch_size {n}" + also)
        return cls(epoch, epoch, n, copies, text, text, args)


def _rows(x) -> int:
    import keras

    leaves = [a for a in keras.tree.flatten(x) if a is not None]
    return len(leaves[0]) if leaves else 0


def _epoch_timer():
    """A Keras callback that times each epoch (``on_epoch_begin`` to ``on_epoch_end``, as a
    user's timer would) and notes when each call of the train function begins
    (``on_train_batch_begin``: a hook that leaves fit's asynchronous batch-end callbacks as
    they are). ``epochs``: ``(seconds, [call start times])`` each."""
    import time

    import keras

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epochs: list[tuple[float, list[float]]] = []
            self._began, self._calls = 0.0, []

        def on_epoch_begin(self, epoch, logs=None):
            self._calls = []
            self._began = time.perf_counter()

        def on_train_batch_begin(self, batch, logs=None):
            self._calls.append(time.perf_counter())

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append((time.perf_counter() - self._began, self._calls))

    return EpochTimer()


def _take_turns(built: dict[str, Any], fit, plan: FitPlan
                ) -> dict[str, tuple[list[float], list[float], int]]:
    """The timed epochs: rounds in which each mode still short of ``FIT_EPOCHS`` epochs and
    ``FIT_MODE_S`` seconds runs one call of ``fit`` (one epoch in the first round, then two
    where an epoch takes under a quarter of ``FIT_MODE_S``), the order reversed each round.
    Per mode: (each epoch's time per step, each epoch's time outside its steps (the time
    before its first call of the train function and after its last, beyond a steady call's),
    the calls of fit)."""
    import numpy as np

    per_step = {m: [] for m in built}
    fixed = {m: [] for m in built}
    calls = {m: 0 for m in built}
    spent = {m: 0.0 for m in built}
    per_call = {m: 1 for m in built}  # two once an epoch is known to be short
    turn = 0
    while True:
        due = [m for m in built if len(per_step[m]) < FIT_EPOCHS
               and (not per_step[m] or spent[m] < FIT_MODE_S)]
        if not due:
            break
        for mode in due if turn % 2 == 0 else due[::-1]:
            timer = _epoch_timer()
            fit(mode, plan.timed, min(per_call[mode], FIT_EPOCHS - len(per_step[mode])), timer)
            calls[mode] += 1
            for seconds, starts in timer.epochs:
                gaps = np.diff(starts)
                steady = float(np.median(gaps[1:] if len(gaps) > 1 else gaps)) if len(
                    gaps) else 0.0
                per_step[mode].append(seconds / plan.steps)
                fixed[mode].append(max(seconds - steady * len(starts), 0.0))
                spent[mode] += seconds
            per_call[mode] = 2 if spent[mode] / len(per_step[mode]) < FIT_MODE_S / 4 else 1
        turn += 1
    return {m: (per_step[m], fixed[m], calls[m]) for m in built if per_step[m]}


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _median(values: list[float]) -> float:
    import numpy as np

    return float(np.median(values))


def _fit_speedup(framework: str, mode: str, timed) -> dict[str, Any]:
    """A JIT-on mode against the nearest JIT-off one, both timed in fit: the ratio of their
    median epochs (above 1: faster), its 95% bootstrap interval and the verdict (``faster``,
    ``slower``, ``no difference``; ``unresolved`` with a single epoch on a side)."""
    import math

    from jitbench.analysis.stats import bootstrap_ratio_ci, is_significant
    from jitbench.define.modes import MODES, nearest_baseline

    base = nearest_baseline(framework)
    spec = MODES.get((framework, mode))
    if spec is None or not spec.jit or base not in timed or mode not in timed:
        return {}
    on, off = timed[mode][0], timed[base][0]
    ratio = _median(off) / _median(on)
    lo, hi = bootstrap_ratio_ci(off, on)
    significant = is_significant(ratio, lo, hi)
    verdict = ("unresolved" if math.isnan(lo) else "no difference" if not significant
               else "faster" if ratio > 1 else "slower")
    return {"keras_fit_speedup": ratio, "keras_fit_ci_low": lo, "keras_fit_ci_high": hi,
            "keras_fit_verdict": verdict}


# a JIT-on mode's answer as fit runs it (_fit_speedup): given only where its step alone and its
# baseline's were measured ok
FIT_ANSWER = ("keras_fit_speedup", "keras_fit_ci_low", "keras_fit_ci_high", "keras_fit_verdict")


def with_fit_fields(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``rows`` with, where a mode's ``fit`` was timed and its step alone measured ok,
    ``keras_fit_loop_s``: what a step in fit's loop costs beyond the step alone (the row's
    ``median_s``): fit's own loop, input pipeline and callbacks, per step; and without the
    fit speedup and verdict (:data:`FIT_ANSWER`) of a mode whose row, or its baseline's, is not
    ``ok``: a failed or wrong step has no speedup in fit either (its fit times stay)."""
    from jitbench.define.modes import nearest_baseline

    rows = [dict(row) for row in rows]  # the caller's rows keep their fields
    status = {row.get("mode"): row.get("status") for row in rows}
    for row in rows:
        fit, alone = row.get("keras_fit_step_s"), row.get("median_s")
        if (row.get("status") == "ok" and isinstance(fit, float)
                and isinstance(alone, (int, float)) and not isinstance(alone, bool)):
            row["keras_fit_loop_s"] = fit - float(alone)
        if "keras_fit_speedup" in row and not (
                row.get("status") == "ok"
                and status.get(nearest_baseline(row["framework"])) == "ok"):
            for name in FIT_ANSWER:
                row.pop(name, None)
    return rows


def fit_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """The summary's first sentences for a Keras model whose ``fit`` was timed: each JIT-on
    mode against its baseline as ``fit`` runs them, the time a step costs in fit's loop, and
    how much of it is fit's own loop and input pipeline (``keras_fit_loop_s``); a mode whose
    ``fit`` failed, and why. ``rows``: as :func:`with_fit_fields` leaves them."""
    from jitbench.define.modes import nearest_baseline
    from jitbench.report import fmt

    by_mode = {row["mode"]: row for row in rows}
    out = []
    for row in rows:
        mode = row["mode"]
        if row.get("keras_fit_error"):
            out.append(f"{mode} in fit: {row['keras_fit_error']}")
        # no answer where this mode's row or its baseline's is not ok (with_fit_fields took
        # it out; Result.speedup says why, the summary lists the failures)
        if not isinstance(row.get("keras_fit_speedup"), float):
            continue
        base = by_mode.get(nearest_baseline(row["framework"]), {})
        if not isinstance(base.get("keras_fit_step_s"), float):
            continue
        ratio, lo, hi = row["keras_fit_speedup"], row["keras_fit_ci_low"], row["keras_fit_ci_high"]
        as_fit, other = "as fit runs them", base["mode"]
        if row["keras_fit_verdict"] == "faster":
            head = f"{mode} is {fmt.times(ratio)} faster than {other} {as_fit} " \
                   f"{fmt.interval(lo, hi)}"
        elif row["keras_fit_verdict"] == "slower":
            head = f"{mode} is {fmt.times(1 / ratio)} slower than {other} {as_fit} " \
                   f"{fmt.interval(1 / hi, 1 / lo)}"
        elif row["keras_fit_verdict"] == "unresolved":
            head = f"{mode} against {other} {as_fit}: unresolved ({fmt.times(ratio)})"
        else:
            head = f"{mode} runs as fast as {other} {as_fit} ({fmt.times(ratio)} " \
                   f"{fmt.interval(lo, hi)}, within the noise)"
        head += (f": {fmt.secs(row['keras_fit_step_s'])} a step in fit's loop against "
                 f"{fmt.secs(base['keras_fit_step_s'])}")
        loops = [r.get("keras_fit_loop_s") for r in (row, base)]
        if all(isinstance(v, float) for v in loops):
            head += (f", of which fit's own loop and input pipeline take {fmt.secs(loops[0])} "
                     f"and {fmt.secs(loops[1])} ({fmt.secs(row['keras_fit_epoch_fixed_s'])} "
                     f"an epoch outside its steps), the step alone the rest")
        head += f" (fit: {row['keras_fit_timed']})"
        out.append(head)
    return out
