"""User-reported XLA failure: an MMD Gaussian kernel whose bandwidth constants are float32
while the data is float64 (``suites/mmd.py`` makes them in the data's dtype instead).

What TensorFlow 2.21 does, in every mode (recorded by tests/test_robustness.py):
- ``eager``: ``InvalidArgumentError: cannot compute Mul as input #1 ... was expected to be a
  double tensor but is a float tensor`` at the first call;
- ``graph``, ``xla``, ``autoclustering``: ``TypeError: Input 'y' of 'Mul' Op has type float32
  that does not match type float64 of argument 'x'`` while tracing — before XLA sees anything.
So it is a ``runtime_error`` of the program in every mode, not an XLA compile error.
"""

from __future__ import annotations

from jitbench.define.workload import Workload
from jitbench.suites.mmd import _bandwidths, flops, inputs, reference, tf_mmd


def tf_stages(p, dtype, variant):
    import numpy as np
    import tensorflow as tf

    # float32 constants whatever the data: the reported mistake
    return [tf_mmd(tf.constant(1.0 / (2.0 * _bandwidths(np.float32) ** 2)))]


_REASON = "user-reported: float32 bandwidth constants against float64 data"

WORKLOAD = Workload(
    name="mmd_f32_bandwidths", description="MMD² with float32 bandwidths on float64 data",
    grid={"quick": [dict(n=16, d=4)]}, dtypes=("float64",), inputs=inputs,
    reference=reference, flops=flops, tolerance={"float64": (1e-3, 1e-4)},
    tf=tf_stages, size_label=lambda p: f"n{p['n']}-d{p['d']}",
    expected_failures={("tf", m): _REASON for m in ("eager", "graph", "xla", "autoclustering")})
