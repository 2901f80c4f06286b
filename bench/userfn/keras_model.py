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


def training_step(model, gpu_visible: Callable[[], bool]
                  ) -> tuple[Callable, dict[str, Any], str, tuple[str, ...]]:
    """(``step(x, y) -> logs``, the fields every row carries, the framework, the modes that
    ``compile()`` can ask for). ``gpu_visible()``: whether TensorFlow sees a GPU here.
    ``UserError`` for a model that is not compiled, or whose backend jitbench does not
    measure."""
    import keras
    from jitbench.frameworks.tf_modes import KERAS_MODES

    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise UserError(f"a Keras model on the {backend!r} backend: jitbench measures Keras "
                        f"models on the TensorFlow backend (KERAS_BACKEND=tensorflow); on "
                        f"JAX, measure the model's stateless step with jax functions")
    if not getattr(model, "compiled", False) or getattr(model, "optimizer", None) is None:
        raise UserError("the Keras model is not compiled: call model.compile(optimizer=..., "
                        "loss=...) first; jitbench measures the training step fit runs")

    def train_step(x, y):
        return model.train_step((x, y))

    train_step.__name__ = f"{model.name}.train_step"
    no_jit = [layer.name for layer in model._flatten_layers()
              if not getattr(layer, "supports_jit", True)]
    fields = {"keras_auto": auto_resolves_to(model, no_jit, gpu_visible),
              "keras_jit_compile": _compiled_with(model)}
    if no_jit:
        fields["keras_no_jit_layers"] = no_jit
    return train_step, fields, "tf", KERAS_MODES


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


def _compiled_with(model) -> str:
    eager = "run_eagerly=True" if getattr(model, "run_eagerly", False) else ""
    return eager or f"jit_compile={model.jit_compile}"
