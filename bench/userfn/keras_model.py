"""A compiled Keras model as users pass it (``jitbench.measure(model, x, y)``): the training
step ``fit`` runs, measured in each mode.

Keras 3's TensorFlow trainer runs one step of ``fit`` as ``model.train_step((x, y))``: called
directly with ``run_eagerly=True``, else inside ``tf.function(..., jit_compile=
model.jit_compile)``. jitbench's TF modes are those three: ``eager`` (``run_eagerly=True``),
``graph`` (``jit_compile=False``) and ``xla`` (``jit_compile=True``), each wrapping the same
``train_step``; the model's weights, optimizer slots and metric trackers are TF variables, so
they are saved before the first call, every mode checked after one step from them (the loss
and every variable) and put back at the end (``jitbench.userfn.stateful.State``).

What ``jit_compile="auto"`` resolves to here, and why, rides on every row (``keras_auto``),
with what ``fit`` runs with as the model was compiled (``keras_jit_compile``) and the layers
that declare they cannot be jitted (``supports_jit=False``): where there are any, the ``xla``
row's error names them instead of Keras's silent fallback to ``jit_compile=False``.

On the JAX backend Keras's trainer is stateless: one step of ``fit`` is
``model.train_step(state, (x, y)) -> (logs, state)``, the state being the values of the
trainable, non-trainable, optimizer and metric variables; ``fit`` runs it under ``jax.jit``
when ``jit_compile`` is on (``"auto"`` turns it on unless a layer opts out) and as it is
otherwise (``run_eagerly=True`` and ``jit_compile=False`` alike). jitbench measures that
function with the model's state as its first argument in JAX's modes (``eager``: op by op, as
``fit`` without JIT; ``jit``: as ``fit`` with it; ``aot``), every returned leaf (logs and the
new state) compared; the model's variables are never assigned, so it is left as it came.

What a step costs inside ``fit``'s own loop is ``jitbench.userfn.keras_fit``'s.

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
    if steps_per_execution(model) > 1:  # fit's calls; the step rows time one step a call
        fields["keras_steps_per_execution"] = steps_per_execution(model)
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
    # copies: fit's jitted step donates the variables' own buffers (keras_fit runs it)
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


def steps_per_execution(model) -> int:
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
