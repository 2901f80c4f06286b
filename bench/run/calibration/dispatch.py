"""Calibration workload: the dispatch floor of each mode, ``x + 1`` on a one-element array.

The work is nil, so a mode's time per call here is what the framework costs per call whatever
the function does: Python dispatch, ``tf.function`` argument handling, the XLA executable
launch. Results near this floor measure the framework, not the computation.
"""

from __future__ import annotations

from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    import numpy as np

    return (np.zeros(p["n"], dtype=dtype),)


def reference(xs, p, variant):
    return xs[0] + 1.0


def _add_one(x):
    return x + 1.0


WORKLOAD = Workload(
    name="calibration_dispatch",
    description="dispatch floor: x + 1 on a one-element float32 array",
    grid={"quick": [dict(n=1)], "full": [dict(n=1)]},
    dtypes=("float32",),
    inputs=inputs,
    reference=reference,
    flops=lambda p, variant: float(p["n"]),
    tolerance={"float32": (0.0, 0.0)},  # 0 + 1 is exact in every mode
    tf=lambda p, dtype, variant: [_add_one],
    jax=lambda p, dtype, variant: [_add_one],
    size_label=lambda p: f"n{p['n']}",
)
