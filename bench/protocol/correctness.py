"""Compare a mode's output with the float64 numpy reference (or with another mode's output).

``max_rel_err`` is normwise: max|out - ref| / max|ref|, because element-wise relative error is
meaningless where the reference is (near) zero, as after a relu. ``within`` is the element-wise
test numpy's ``allclose`` uses: |out - ref| <= atol + rtol * |ref|.
"""

from __future__ import annotations

import numpy as np


def flatten(out) -> np.ndarray:
    """One float64 vector from an array or a (nested) tuple/list/dict of arrays."""
    if isinstance(out, dict):
        out = [out[k] for k in sorted(out)]
    if isinstance(out, (list, tuple)):
        parts = [flatten(o) for o in out]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(out, dtype=np.float64).ravel()


def compare(out, ref, rtol: float, atol: float) -> dict[str, float | bool]:
    o, r = flatten(out), flatten(ref)
    if o.shape != r.shape:
        return {"max_abs_err": float("inf"), "max_rel_err": float("inf"), "within": False,
                "shape_error": f"output has {o.size} values, reference {r.size}"}
    if not np.all(np.isfinite(o)) and np.all(np.isfinite(r)):
        return {"max_abs_err": float("inf"), "max_rel_err": float("inf"), "within": False}
    diff = np.abs(o - r)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(r).max()) if r.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    within = bool(np.all(diff <= atol + rtol * np.abs(r)))
    return {"max_abs_err": max_abs, "max_rel_err": max_rel, "within": within}
