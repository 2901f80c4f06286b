"""How a user's arguments reach their function: positional and keyword, static or not.

``jitbench.measure(power_iteration, a, v, n_iter=30)`` is how JAX and flax code call a
function jitted with ``static_argnames``. The rest of jitbench (placing inputs, counting them,
building the modes, checking answers, donating state) works on a tuple of positional
arguments, so keyword arguments are folded into that tuple once, here, after the positional
ones: the function measured is a wrapper that hands them back by name
(:func:`with_keywords`). One rule then says which arguments are static, for positions and
keywords alike (:func:`with_keywords`, :func:`static_positions`).

:func:`keyword_arguments` sorts out what a caller passed: ``jitbench.measure`` and the
``jit_benchmark`` fixture have options of their own (``name``, ``device``, ...), so a keyword
that is both one of theirs and a parameter of the function is refused, naming it, rather than
silently taken by one side.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitbench.errors import UserError
from jitbench.protocol import trees


def static_positions(args: Sequence) -> tuple[int, ...]:
    """The positions of the arguments passed as static: a top-level argument that holds no
    array (a Python int, float, bool or string, None, or a tuple of them) and can be hashed.
    JAX compiles once per value there (``static_argnums``); tf.function traces once per Python
    value anyway."""
    out = []
    for i, a in enumerate(args):
        if trees.arrays([a]):
            continue
        try:
            hash(a)
        except TypeError:
            continue
        out.append(i)
    return tuple(out)


def with_keywords(fn: Callable, args: tuple, kwargs: Mapping[str, Any],
                  declared: tuple[int, ...] | None, jitted: Callable, donated: tuple[int, ...],
                  donate: Any = None
                  ) -> tuple[Callable, tuple, tuple[int, ...], tuple[int, ...], tuple[str, ...]]:
    """(the function taking every argument by position, the arguments, the static positions,
    the donated positions, the keyword names) for ``fn(*args, **kwargs)``.

    ``declared``: the static positions the jit (``jitted``, as the user passed it) declared,
    or None for an undecorated function. A jitted function keeps its own declaration: its
    ``static_argnums`` for positional arguments, its ``static_argnames`` (and
    ``donate_argnames``) for keyword ones, so a keyword it traces stays traced as it would
    in the user's code. An undecorated function gets one rule for both: an argument that
    holds no array is static (:func:`static_positions`). The keywords follow the positional
    arguments, in the order given; ``donate=K`` must name a positional argument."""
    n = len(args)
    if not kwargs:
        return fn, args, (declared if declared is not None else static_positions(args)), \
            donated, ()
    names, values = tuple(kwargs), tuple(kwargs.values())
    if (isinstance(donate, int) and not isinstance(donate, bool) and n <= donate
            < n + len(names)):
        raise UserError(f"donate={donate}: give the position of a positional argument (0 to "
                        f"{n - 1}); pass the state to donate by position, not as a keyword")
    info = getattr(jitted, "_jit_info", None)  # jax's record of the jit's arguments
    if declared is not None:
        static = tuple(i for i in declared if i < n) + _named(names, info, "static_argnames", n)
    else:
        static = static_positions(args + values)
    donated = tuple(i for i in donated if i < n) + _named(names, info, "donate_argnames", n)

    def call(*xs):
        return fn(*xs[:n], **dict(zip(names, xs[n:])))

    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        if hasattr(fn, attr):  # not __wrapped__: tf.function would read the wrong signature
            setattr(call, attr, getattr(fn, attr))
    return call, args + values, static, donated, names


def _named(names: tuple[str, ...], info, field: str, n: int) -> tuple[int, ...]:
    """The positions (after the ``n`` positional arguments) of the keywords the jit's
    ``field`` names."""
    declared = set(getattr(info, field, None) or ())
    return tuple(n + j for j, name in enumerate(names) if name in declared)


def call_with(fn: Callable, args: Sequence, keywords: tuple[str, ...]):
    """``fn`` called as the user's function is: the last ``len(keywords)`` of ``args`` by
    name (a ``reference`` function gets the same keywords)."""
    n = len(args) - len(keywords)
    return fn(*args[:n], **dict(zip(keywords, args[n:])))


def given_options(func: Callable, values: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword-only options of ``func`` (``jitbench.measure``, the fixture) that
    ``values`` (its ``locals()`` on entry) sets to something other than their default: the
    ones a keyword of the user's function could have meant."""
    return {name: values[name] for name, p in inspect.signature(func).parameters.items()
            if p.kind is p.KEYWORD_ONLY and name in values and values[name] is not p.default}


def keyword_arguments(fn: Callable, args: Sequence, keywords: Mapping[str, Any],
                      kwargs: Mapping[str, Any] | None, given: Mapping[str, Any],
                      options: Sequence[str], where: str) -> dict[str, Any]:
    """The keyword arguments to pass to ``fn``: ``keywords`` (those ``where`` did not take as
    its own options) and ``kwargs`` (an explicit mapping, which also says that every option
    ``where`` got is its own). ``given``: the options of ``where`` the caller set;
    ``options``: all of their names.

    Raises ``UserError`` naming the keyword: one given twice; one ``fn`` does not take (the
    closest option of ``where``, where one is close: a misspelt option lands here); one that
    is both an option of ``where`` set by the caller and a parameter of ``fn`` left for a
    keyword, without ``kwargs`` to tell which was meant; keywords for a Keras model."""
    from jitbench.userfn.keras_model import is_keras_model

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise UserError(f"kwargs={kwargs!r}: give a dict of the function's keyword arguments, "
                        f"such as kwargs={{'n_iter': 30}}")
    out = dict(kwargs or {})
    twice = sorted(set(out) & set(keywords))
    if twice:
        raise UserError(f"{twice[0]}= is given both as a keyword and in kwargs; give it once")
    out.update(keywords)
    label = getattr(fn, "__name__", None) or type(fn).__name__
    if out and is_keras_model(fn):
        raise UserError(f"{', '.join(f'{k}=' for k in out)}: a Keras model is measured on "
                        f"x, y as fit gets them; it takes no keyword arguments here")
    params = _parameters(fn)
    try:  # the parameters the positional arguments fill are not free for a keyword
        filled = set(inspect.Signature(list(params.values())).bind_partial(*args).arguments)
    except (TypeError, AttributeError):  # no signature (a builtin), or too many arguments:
        return out  # passed as they came; the call says what is wrong
    free_names = {p.name for p in params.values() if p.name not in filled
                  and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if kwargs is None:
        both = [name for name in given if name in free_names]
        if both:
            name = both[0]
            raise UserError(
                f"{name}= is both an option of {where} and a parameter of {label}, so which "
                f"one it is for is unclear. Give {label}'s keyword arguments as kwargs: "
                f"{where}({label}, ..., kwargs={{{name!r}: ...}}) passes it to {label}; "
                f"kwargs={{}} (or {label}'s other keywords) keeps {name}= {where}'s")
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in out:
        if takes_any or name in free_names:
            continue
        close = difflib.get_close_matches(name, options, n=1)
        hint = f" (did you mean {where}'s option {close[0]}=?)" if close else ""
        why = ("it is already filled by a positional argument" if name in params
               else f"{label} has no parameter {name!r}")
        raise UserError(f"{name}= is neither an option of {where} nor a keyword {label} "
                        f"takes: {why}{hint}")
    return out


def _parameters(fn: Callable) -> Mapping[str, inspect.Parameter] | None:
    """``fn``'s parameters (through ``jax.jit``'s and tf.function's wrappers), or None
    where Python cannot tell them."""
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
