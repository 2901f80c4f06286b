"""TensorFlow's modes, as data (imports no TensorFlow; the adapter is ``tf_adapter.py``)."""

from . import FrameworkSpec, ModeSpec

# auto-clustering needs these set before TensorFlow is imported: a worker of its own.
# --tf_xla_cpu_global_jit lets clusters form on CPU too (auto_jit alone is GPU only).
AUTOCLUSTER_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"

SPEC = FrameworkSpec(
    name="tf",
    # compile counters come from XLA's log lines, which only a worker's redirected fd 2 sees
    counts_in_process=False,
    modes=(
        ModeSpec("tf", "eager", False, "plain Python call on eager tensors", color="#8da0cb"),
        ModeSpec("tf", "graph", False, "tf.function(fn)", color="#1f5fa8"),
        ModeSpec("tf", "xla", True, "tf.function(fn, jit_compile=True)", baseline="graph",
                 color="#e6550d"),
        ModeSpec("tf", "autoclustering", True,
                 f"tf.function(fn) with TF_XLA_FLAGS='{AUTOCLUSTER_FLAGS}'",
                 worker_group="autoclustering", env={"TF_XLA_FLAGS": AUTOCLUSTER_FLAGS},
                 baseline="graph", color="#b2182b", label="auto-\nclustering",
                 floor_from="graph"),
    ),
)
