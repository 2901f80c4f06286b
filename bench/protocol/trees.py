"""Inputs and outputs as users pass them: nested lists, tuples, dicts and registered pytree
nodes of arrays (JAX pytrees, TF nests), walked without importing a framework.

Where JAX is already imported (its nodes can only exist then), ``jax.tree_util`` walks the
tree, so dataclasses and other nodes registered with it are opened too; otherwise dicts (keys
sorted, as JAX and ``tf.nest`` order them), lists, tuples and named tuples are, and anything
else is a leaf. ``None`` is an empty subtree, as in JAX. Paths read as Python subscripts::

    >>> [p for p, _ in leaves(([("w", "b")], {"x": 1}))]
    ['[0][0][0]', '[0][0][1]', "[1]['x']"]
"""

from __future__ import annotations

import sys
from typing import Any, Callable


def _jax_tree():
    jax = sys.modules.get("jax")
    return getattr(jax, "tree_util", None) if jax is not None else None


def leaves(tree: Any) -> list[tuple[str, Any]]:
    """(path, leaf) of every leaf of ``tree``, in the order :func:`map_leaves` visits them."""
    tu = _jax_tree()
    if tu is not None:
        flat, _ = tu.tree_flatten_with_path(tree)
        return [(tu.keystr(path), leaf) for path, leaf in flat]
    out: list[tuple[str, Any]] = []
    _walk(tree, "", lambda path, leaf: out.append((path, leaf)) or leaf)
    return out


def map_leaves(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with every leaf replaced by ``fn(leaf)``, the same nesting."""
    tu = _jax_tree()
    if tu is not None:
        return tu.tree_map(fn, tree)
    return _walk(tree, "", lambda path, leaf: fn(leaf))


def map_arrays(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with every array leaf (:func:`is_array`) replaced by ``fn(leaf)``; other
    leaves (a user's static arguments) kept as they are."""
    return map_leaves(lambda x: fn(x) if is_array(x) else x, tree)


def arrays(tree: Any) -> list[tuple[str, Any]]:
    """(path, array) of every array leaf of ``tree``."""
    return [(p, x) for p, x in leaves(tree) if is_array(x)]


def is_array(x: Any) -> bool:
    """An array of any framework, or numpy's."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _walk(tree: Any, path: str, fn: Callable[[str, Any], Any]) -> Any:
    if tree is None:
        return None
    if isinstance(tree, dict):
        try:
            keys = sorted(tree)
        except TypeError:  # keys of several types: an order all the same
            keys = sorted(tree, key=repr)
        mapped = {k: _walk(tree[k], f"{path}[{k!r}]", fn) for k in keys}
        if type(tree) is dict:
            return mapped
        try:
            return type(tree)((k, mapped[k]) for k in tree)
        except TypeError:  # a dict subclass with another constructor (defaultdict)
            return {k: mapped[k] for k in tree}
    if isinstance(tree, (list, tuple)):
        items = [_walk(x, f"{path}[{i}]", fn) for i, x in enumerate(tree)]
        if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a named tuple
            return type(tree)(*items)
        return type(tree)(items) if type(tree) in (list, tuple) else items
    return fn(path, tree)
