"""A compiled Keras model measured as ``fit`` runs it: ``jitbench.measure(model, x, y)``.

Keras 3's TensorFlow trainer runs one step of ``fit`` as ``model.train_step((x, y))``: called
directly with ``run_eagerly=True``, else inside ``tf.function(..., jit_compile=
model.jit_compile)``. jitbench's TF modes are those three: ``eager`` (``run_eagerly=True``),
``graph`` (``jit_compile=False``) and ``xla`` (``jit_compile=True``), each wrapping the same
``train_step``; the model's weights, optimizer slots and metric trackers are TF variables, so
the user-function path saves them before the first call, checks every mode after one step from
them (the loss and every variable) and puts them back at the end.

What ``jit_compile="auto"`` resolves to here, and why, rides on every row (``keras_auto``),
with what ``fit`` runs with as the model was compiled (``keras_jit_compile``) and the layers that declare
they cannot be jitted (``supports_jit=False``): where there are any, the ``xla`` row's error
names them instead of Keras's silent fallback to ``jit_compile=False``.

On the JAX backend Keras's trainer is stateless: one step of ``fit`` is
``model.train_step(state, (x, y)) -> (logs, state)``, the state being the values of the
trainable, non-trainable, optimizer and metric variables; ``fit`` runs it under ``jax.jit``
when ``jit_compile`` is on (``"auto"`` turns it on unless a layer opts out) and as it is
otherwise (``run_eagerly=True`` and ``jit_compile=False`` alike). jitbench measures that
function with the model's state as its first argument in JAX's modes (``eager``: op by op, as
``fit`` without JIT; ``jit``: as ``fit`` with it; ``aot``), every returned leaf (logs and the
new state) compared; the model's variables are never assigned, so it is left as it came.

With ``batch_size`` (``jitbench.measure(model, x, y, batch_size=32)``), ``x, y`` are a dataset
as ``fit`` gets it: the step is measured on its first batch, and :func:`fit_epochs` runs one
epoch of ``fit`` per mode (as ``compile()`` would set it), counting the traces of the training
step (its Python body runs once per trace under ``tf.function`` or ``jax.jit``; a ragged last
batch is a second trace on JAX, while TensorFlow's data pipeline leaves the batch dimension
unknown and XLA compiles the new shape underneath) and timing the epoch;
the model's variables and settings are put back after.

Nothing here imports Keras or TensorFlow until a Keras model is passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jitbench.errors import UserError


def is_keras_model(obj: Any) -> bool:
    """A Keras model (by its type's module: no import of Keras)."""
    return (type(obj).__module__.split(".")[0] in ("keras", "tf_keras")
            and hasattr(obj, "train_step") and hasattr(obj, "compile"))


def training_step(model, args: tuple, gpu_visible: Callable[[], bool]
                  ) -> tuple[Callable, tuple, dict[str, Any], str, tuple[str, ...]]:
    """(the step ``fit`` runs, the arguments to call it with, the fields every row carries,
    the framework, the modes that ``compile()`` can ask for) for ``jitbench.measure(model,
    *args)``, ``args`` being ``(x, y)``. ``gpu_visible()``: whether TensorFlow sees a GPU
    here. ``UserError`` for a model that is not compiled, or whose backend jitbench does not
    measure."""
    import keras
    from jitbench.frameworks.tf_modes import KERAS_MODES

    backend = keras.backend.backend()
    if backend not in ("tensorflow", "jax"):
        raise UserError(f"a Keras model on the {backend!r} backend: jitbench measures Keras "
                        f"models on the tensorflow and jax backends (KERAS_BACKEND)")
    if not getattr(model, "compiled", False) or getattr(model, "optimizer", None) is None:
        raise UserError("the Keras model is not compiled: call model.compile(optimizer=..., "
                        "loss=...) first; jitbench measures the training step fit runs")
    if len(args) != 2:
        raise UserError(f"jitbench.measure(model, x, y): a Keras model takes one batch of "
                        f"inputs and targets, not {len(args)} arguments")
    no_jit = [layer.name for layer in model._flatten_layers()
              if not getattr(layer, "supports_jit", True)]
    fields = {"keras_jit_compile": _compiled_with(model)}
    if _steps_per_execution(model) > 1:  # fit's calls; the step rows time one step a call
        fields["keras_steps_per_execution"] = _steps_per_execution(model)
    if backend == "jax":
        from jitbench.frameworks.jax_modes import KERAS_JAX_MODES

        step, args = _jax_step(model, args)
        fields.update(keras_backend="jax", keras_auto=(
            "on: Keras jits the training step on the JAX backend" if not no_jit else
            f"off: layers with supports_jit=False ({', '.join(no_jit)})"))
        framework, modes = "jax", KERAS_JAX_MODES
    else:
        def step(x, y):
            return model.train_step((x, y))

        fields["keras_auto"] = auto_resolves_to(model, no_jit, gpu_visible)
        framework, modes = "tf", KERAS_MODES
    step.__name__ = f"{model.name}.train_step"
    if no_jit:
        fields["keras_no_jit_layers"] = no_jit
    return step, args, fields, framework, modes


def _jax_step(model, args: tuple) -> tuple[Callable, tuple]:
    """The JAX backend's stateless step and its arguments, the model's state first (module
    docstring)."""
    import keras

    x, y = args  # placed on the device by the measurement (as fit's data adapter does)
    model._symbolic_build(data_batch=(x, y))  # what fit does first: the optimizer's slots
    # copies: fit's jitted step donates the variables' own buffers (fit_epochs runs it)
    state = tuple([keras.ops.copy(v.value) for v in vs] for vs in (
        model.trainable_variables, model.non_trainable_variables, model.optimizer.variables,
        model.metrics_variables))

    def train_step(state, x, y):
        return model.train_step(state, (x, y))

    return train_step, (state, x, y)


def auto_resolves_to(model, no_jit: list[str], gpu_visible: Callable[[], bool]) -> str:
    """What ``compile(jit_compile="auto")`` turns into on this machine (Keras's own
    ``Trainer._resolve_auto_jit_compile``), and why (its rule on the TensorFlow backend)."""
    if model._resolve_auto_jit_compile():
        return "on: a GPU is visible and every layer supports XLA"
    if not gpu_visible():
        return "off: TensorFlow on a CPU-only machine (Keras turns XLA off there)"
    if getattr(model, "_distribute_strategy", None):
        return "off: the model is under a tf.distribute strategy"
    if no_jit:
        return f"off: layers with supports_jit=False ({', '.join(no_jit)})"
    return "off: Keras's model_supports_jit says no (TensorFlow op determinism is on)"


def _steps_per_execution(model) -> int:
    """``compile(steps_per_execution=K)``: the steps ``fit`` runs per call of its train
    function (on TensorFlow a loop inside one ``tf.function``; on JAX a Python loop of calls
    of the jitted step)."""
    k = getattr(model, "steps_per_execution", 1)
    return int(k) if isinstance(k, int) else 1


def _compiled_with(model) -> str:
    eager = "run_eagerly=True" if getattr(model, "run_eagerly", False) else ""
    return eager or f"jit_compile={model.jit_compile}"


def first_batch(args: tuple, batch_size: Any) -> tuple:
    """``(x[:batch_size], y[:batch_size])``, or ``UserError`` naming a bad ``batch_size``."""
    n = len(args[0])
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not (
            1 <= batch_size <= n):
        raise UserError(f"batch_size={batch_size!r}: give the batch size fit uses, an int from "
                        f"1 to the {n} rows of x")
    return tuple(a[:batch_size] for a in args)


def fit_epochs(model, args: tuple, batch_size: int, modes) -> dict[str, dict[str, Any]]:
    """Per mode of ``modes`` that ``fit`` has (``KERAS_FIT``, ``KERAS_JAX_FIT``): one epoch of
    ``model.fit(x, y, batch_size=batch_size, shuffle=False)`` with the mode's settings, its
    traces of the training step counted (``keras_fit_traces``; not for ``eager``, whose step
    runs as Python every time) and its wall time (``keras_fit_epoch_s``: traces and compiles
    included); the model's weights, optimizer and metric state and its settings put back."""
    import math
    import time

    import keras
    from jitbench.frameworks.jax_modes import KERAS_JAX_FIT
    from jitbench.frameworks.tf_modes import KERAS_FIT

    settings = {"tensorflow": KERAS_FIT, "jax": KERAS_JAX_FIT}.get(keras.backend.backend(), {})
    wanted = [m for m in modes if m in settings]
    if not wanted:
        return {}
    x, y = args
    n = len(x)
    steps = math.ceil(n / batch_size)
    last = n - (steps - 1) * batch_size
    per_call = _steps_per_execution(model)
    text = (f"batch_size {batch_size}, {steps} steps"
            + (f", the last of {last} rows (a new shape)" if last != batch_size else "")
            + (f", {per_call} per call (steps_per_execution)" if per_call > 1 else ""))
    model._symbolic_build(data_batch=first_batch(args, batch_size))  # optimizer slots first
    variables = [*model.weights, *model.optimizer.variables, *model.metrics_variables]
    saved = [keras.ops.convert_to_numpy(v.value) for v in variables]
    was = {"run_eagerly": model.run_eagerly, "jit_compile": model.jit_compile}
    traces = 0
    step = model.train_step

    def counted(*a, **k):
        nonlocal traces
        traces += 1
        return step(*a, **k)

    out: dict[str, dict[str, Any]] = {}
    model.train_step = counted
    try:
        for mode in wanted:
            for key, value in settings[mode].items():
                setattr(model, key, value)
            model.make_train_function(force=True)
            traces = 0
            began = time.perf_counter()
            model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, shuffle=False)
            out[mode] = {"keras_fit": text,
                         "keras_fit_epoch_s": time.perf_counter() - began}
            if not settings[mode]["run_eagerly"]:  # run eagerly, the step is never traced
                out[mode]["keras_fit_traces"] = traces
    finally:
        del model.train_step  # the class's own again
        for key, value in was.items():
            setattr(model, key, value)
        model.train_function = None  # fit builds it again with the model's own settings
        for v, value in zip(variables, saved):
            v.assign(value)
    return out

