"""Calibration workload: a STREAM-like triad ``a = b + 3·c``, the machine's memory bandwidth.

A roofline needs two ceilings: the peak GFLOP/s (``peak_matmul``) and the bytes per second
memory can deliver. The triad does 2 FLOPs per 12 bytes moved (float32: read b and c, write
a), far below any machine's balance point, so its time is the memory's. Arrays of 2**23 float32
(32 MiB each, 96 MiB per call) are larger than the last-level caches of the machines this runs
on, so the data really comes from memory. As with the peak, every framework mode measures its
own and the report takes the best: op-by-op modes make an extra pass for ``3·c`` and come out
slower, which is the point of fusing, not a property of the memory.

Bandwidth is counted the STREAM way, from the bytes the triad must move (:func:`bytes_moved`),
not from what a mode really moved.
"""

from __future__ import annotations

from jitbench.define.workload import Workload

N = 1 << 23
SCALAR = 3.0
ITEMSIZE = 4  # float32


def bytes_moved(params) -> float:
    """Bytes one triad must move: read b and c, write a."""
    return 3.0 * ITEMSIZE * params["n"]


def inputs(p, dtype, rng):
    # drawn in float32 (the workload's only dtype), not drawn in float64 and cast: 2 x 8M values
    b = rng.standard_normal(p["n"], dtype=dtype)
    c = rng.standard_normal(p["n"], dtype=dtype)
    return b, c


def reference(xs, p, variant):
    b, c = xs
    return b + SCALAR * c


def _triad(b, c):
    return b + SCALAR * c


WORKLOAD = Workload(
    name="calibration_bandwidth",
    description=f"memory bandwidth: STREAM triad a = b + {SCALAR:g}*c, float32, n={N}",
    grid={"quick": [{"n": N}], "full": [{"n": N}]},
    dtypes=("float32",),
    inputs=inputs,
    reference=reference,
    flops=lambda p, variant: 2.0 * p["n"],
    # one multiply-add of N(0,1) values: float32 rounding only
    tolerance={"float32": (1e-5, 1e-5)},
    tf=lambda p, dtype, variant: [_triad],
    jax=lambda p, dtype, variant: [_triad],
    size_label=lambda p: f"n{p['n']}",
)
