"""A plain or an already-jitted function as users pass it, and the framework of its inputs.

``jitbench.measure(jax.jit(f), x)`` measures ``f`` itself (:func:`unwrap`), so its JIT-off
modes run without JIT, keeping what the jit declared (its static and donated arguments). The
framework is told from the inputs' type names (:func:`infer_framework`): nothing here imports
TensorFlow or JAX. How keyword and static arguments reach the function is
``jitbench.userfn.arguments``'s; a step that carries state, ``jitbench.userfn.stateful``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jitbench.define.modes import FRAMEWORKS, SPECS
from jitbench.errors import UserError
from jitbench.protocol import trees

NAMES = {fw: SPECS[fw].title for fw in FRAMEWORKS}
# Top-level module of an input's type -> framework (type names only: no import needed)
_TYPE_MODULES = {mod: fw for fw in FRAMEWORKS for mod in SPECS[fw].type_modules}
_ANY = " or ".join(f"framework={fw!r}" for fw in FRAMEWORKS)


def unwrap(fn) -> tuple[Callable, str | None, tuple[int, ...] | None, tuple[int, ...]]:
    """(the function to measure, the decorator it came in or None, the static positions that
    decorator declared or None, the positions it donates). An already-jitted function is
    measured from its undecorated form, so its JIT-off modes run without JIT: ``jax.jit(f)``
    -> ``f`` (``__wrapped__``, with its ``static_argnums`` and ``donate_argnums``),
    ``tf.function(f, ...)`` -> ``f`` (``python_function``).

    >>> unwrap(len)
    (<built-in function len>, None, None, ())
    """
    top = type(fn).__module__.split(".")[0]
    inner = getattr(fn, "__wrapped__", None)
    if type(fn).__module__.startswith("flax.nnx") and callable(inner):
        return inner, "nnx.jit", None, ()
    if top in ("jax", "jaxlib") and callable(inner) and hasattr(fn, "lower"):
        info = getattr(fn, "_jit_info", None)  # jax's record of the jit's arguments
        static = getattr(info, "static_argnums", None)
        donated = tuple(getattr(info, "donate_argnums", None) or ())
        return inner, "jax.jit", tuple(static) if static is not None else None, donated
    inner = getattr(fn, "python_function", None)
    if top == "tensorflow" and callable(inner):
        jit = getattr(fn, "_jit_compile", None)
        return (inner, f"tf.function(jit_compile={jit})" if jit is not None else "tf.function",
                (), ())
    return fn, None, None, ()


def static_stage(fn: Callable, static: tuple[int, ...]) -> Callable:
    """``fn`` with ``static_argnums`` set for the adapters (a wrapper: the user's function is
    left as it came)."""
    if not static:
        return fn

    def stage(*xs):
        return fn(*xs)

    stage.__name__ = getattr(fn, "__name__", "fn")
    stage.static_argnums = static  # type: ignore[attr-defined]
    return stage


def infer_framework(args: Sequence, framework: str | None = None) -> str:
    """The framework of the inputs (``framework`` when given, checked against them).

    >>> infer_framework([np.ones(3)], "jax")
    'jax'
    """
    if framework is not None and framework not in FRAMEWORKS:
        raise UserError(f"unknown framework {framework!r}; valid: {', '.join(FRAMEWORKS)}")
    seen: dict[str, tuple[str, str]] = {}
    for path, x in trees.leaves(list(args)):  # each argument may be a pytree of arrays
        fw = _TYPE_MODULES.get(type(x).__module__.split(".")[0])
        if fw is not None and fw not in seen:
            seen[fw] = (_argument(path), type(x).__name__)
    if len(seen) > 1:
        parts = [f"{where} is a {NAMES[fw]} {t}" for fw, (where, t) in sorted(seen.items())]
        raise UserError(f"inputs of mixed frameworks: {' and '.join(parts)}; pass the inputs "
                        f"of one framework (or numpy arrays and {_ANY})")
    if framework is not None:
        if seen and framework not in seen:
            (fw, (where, t)), = seen.items()
            raise UserError(f"framework={framework!r}, but {where} is a {NAMES[fw]} {t}")
        return framework
    if not seen:
        raise UserError(f"cannot tell the framework from the inputs (no "
                        f"{' or '.join(NAMES.values())} array among them); pass {_ANY}")
    return next(iter(seen))


def _argument(path: str) -> str:
    """``"[0][1]['w']"`` (a leaf's path in the argument list) -> ``"argument 0 at [1]['w']"``."""
    head, _, rest = path[1:].partition("]")
    return f"argument {head} at {rest}" if rest else f"argument {head}"
