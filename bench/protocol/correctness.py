"""Compare a mode's output with the float64 numpy reference (or with another mode's output), at
the precision its matrix products ran at.

``max_rel_err`` is max|out - ref| / max|ref| and ``norm_rel_err`` the normwise error
||out - ref|| / ||ref|| (2-norms): element-wise relative error is meaningless where the
reference is (near) zero, as after a relu. ``within`` holds when the workload's element-wise
tolerance does (numpy's ``allclose``: |out - ref| <= atol + rtol * |ref|) or, where the
products ran at a *reduced* precision (:data:`REDUCED`: TF32 on Ampere and later GPUs, bf16),
when the normwise error is within :func:`normwise_bound` of that precision.

The effective precision (``matmul_precision`` on every row) is what a framework adapter reads
from its setting and the device: ``float64`` for float64 rows, ``float32`` for float32 products
computed in float32, ``tf32`` where float32 products run with 10-bit mantissas. A JIT mode's
output still fails when its error against the reference is :data:`JIT_ERROR_FACTOR` times its
JIT-off mode's at the same precision (:func:`far_above`): a looser bound for TF32 must not hide
a compiler that lost accuracy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jitbench.protocol import trees

# unit roundoff (half a unit in the last place) of the mantissa the products are computed with
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "tf32": 2.0 ** -11,
                 "float16": 2.0 ** -11, "bf16": 2.0 ** -8}
PRECISIONS = tuple(UNIT_ROUNDOFF)
REDUCED = ("tf32", "bf16")  # float32 inputs whose products run at fewer mantissa bits
# The normwise bound at a reduced precision: NORMWISE_FACTOR * u * sqrt(K), K the reduction
# length the workload declares. Rounding the inputs to u costs about u per product; the sums
# add random-signed errors, which grow like sqrt(K) (the probabilistic bound of Higham & Mary,
# "A new approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 2019).
NORMWISE_FACTOR = 4.0
JIT_ERROR_FACTOR = 10.0  # a JIT output this many times as far from the reference fails


def flatten(out) -> np.ndarray:
    """One float64 vector from an array or a pytree of arrays (``jitbench.protocol.trees``);
    of a single float64 leaf, a view of it (read it, never write it)."""
    parts = [np.asarray(x, dtype=np.float64).ravel() for _, x in trees.leaves(out)]
    if len(parts) == 1:  # no copy: an 8M-value output is checked several times a group
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0)


def worst_leaf(out, ref, rtol: float, atol: float) -> str | None:
    """The path of the leaf of ``out`` furthest outside the tolerance of ``ref``'s (the most
    elements outside, then the largest error), when ``out`` is a pytree of several leaves
    shaped as ``ref``'s; None otherwise."""
    o, r = trees.leaves(out), trees.leaves(ref)
    if len(o) < 2 or len(o) != len(r):
        return None
    worst, key = None, (0, 0.0)
    for (path, a), (_, b) in zip(o, r):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return None
        diff = np.abs(a - b)
        bad = ~(diff <= atol + rtol * np.abs(b))
        k = (int(bad.sum()), float(np.nanmax(diff)) if diff.size else 0.0)
        if k[0] and k > key:
            worst, key = path, k
    return worst


def normwise_bound(precision: str, reduction: int | None = None) -> float:
    """The normwise error an output computed at ``precision`` may carry, for sums of
    ``reduction`` terms (1 when the workload declares none): ``normwise_bound("tf32", 512)``
    is about 0.044."""
    if precision not in UNIT_ROUNDOFF:
        raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    return NORMWISE_FACTOR * UNIT_ROUNDOFF[precision] * math.sqrt(max(1, int(reduction or 1)))


def compare(out, ref, rtol: float, atol: float, precision: str | None = None,
            reduction: int | None = None) -> dict[str, Any]:
    """The errors of ``out`` against ``ref`` and whether they are ``within`` tolerance (see
    the module docstring); ``bound`` is the normwise bound where ``precision`` is reduced;
    ``leaf``, outside the tolerance, the path of the pytree leaf furthest out
    (:func:`worst_leaf`)."""
    o, r = flatten(out), flatten(ref)
    inf = float("inf")
    if o.shape != r.shape:
        return {"max_abs_err": inf, "max_rel_err": inf, "norm_rel_err": inf, "within": False,
                "shape_error": f"output has {o.size} values, reference {r.size}"}
    if not np.all(np.isfinite(o)) and np.all(np.isfinite(r)):
        return {"max_abs_err": inf, "max_rel_err": inf, "norm_rel_err": inf, "within": False}
    # two temporaries, written in place: each fresh array of an 8M-value output (the
    # calibration's bandwidth triad) costs its page faults, more than the arithmetic
    diff = np.subtract(o, r)
    np.abs(diff, out=diff)
    bound = np.abs(r)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(bound.max()) if r.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else inf)
    norm_ref = float(np.linalg.norm(r)) if r.size else 0.0
    norm_diff = float(np.linalg.norm(diff)) if diff.size else 0.0
    norm_rel = norm_diff / norm_ref if norm_ref > 0 else (0.0 if norm_diff == 0 else inf)
    bound *= rtol
    bound += atol  # atol + rtol * |ref|, numpy's allclose
    within = bool(np.less_equal(diff, bound).all())
    out_fields: dict[str, float | bool | str] = {"max_abs_err": max_abs, "max_rel_err": max_rel,
                                                 "norm_rel_err": norm_rel}
    leaf = None if within else worst_leaf(out, ref, rtol, atol)
    if leaf:
        out_fields["leaf"] = leaf
    if precision in REDUCED:
        bound = normwise_bound(precision, reduction)
        out_fields["bound"] = bound
        within = within or norm_rel <= bound
    out_fields["within"] = within
    return out_fields


def far_above(err: float, nojit_err: float, precision: str | None,
              reduction: int | None = None) -> bool:
    """Whether a JIT mode's normwise error ``err`` is :data:`JIT_ERROR_FACTOR` times its
    JIT-off mode's ``nojit_err`` (both against the reference, at the same ``precision``). The
    JIT-off error counts as at least what a correct computation may carry, so an answer exact
    by luck does not make every rounding a failure: at a reduced precision half a unit
    roundoff (rounding the inputs dominates there), at a native one the summation's own error,
    :func:`normwise_bound` (another order of the same sums moves the result by about that)."""
    if precision in REDUCED:
        floor = 0.5 * UNIT_ROUNDOFF[precision]
    elif precision in UNIT_ROUNDOFF:
        floor = normwise_bound(precision, reduction)
    else:
        floor = 0.0
    return err > JIT_ERROR_FACTOR * max(nojit_err, floor)
