"""TensorFlow's modes, as data (imports no TensorFlow; the adapter is ``tf_adapter.py``)."""

from jitbench.frameworks import FrameworkSpec, ModeSpec

# The TF worker runs with this flag (the adapter adds it before importing TensorFlow): CPU
# clusters can form at all. Auto-clustering is then switched on per call, for its own
# functions only (global_jit_level in their call options), so it shares the worker of graph
# mode and the two are interleaved; graph and xla are unchanged by it (no cluster forms).
CPU_GLOBAL_JIT = "--tf_xla_cpu_global_jit"
AUTOCLUSTER_FLAGS = CPU_GLOBAL_JIT  # the TF_XLA_FLAGS auto-clustering needs in a process

# The modes a Keras model's compile() can ask for: run_eagerly=True, jit_compile=False and
# jit_compile=True (jitbench.userfn.keras_model)
KERAS_MODES = ("eager", "graph", "xla")
# what each of them sets on the model for an epoch of fit (jitbench.userfn.keras_model)
KERAS_FIT = {"eager": {"run_eagerly": True},
             "graph": {"run_eagerly": False, "jit_compile": False},
             "xla": {"run_eagerly": False, "jit_compile": True}}

SPEC = FrameworkSpec(
    name="tf",
    # compile counters come from XLA's log lines, which only a worker's redirected fd 2 sees
    counts_in_process=False,
    # XLA's INFO lines ("Compiled <cluster> n times") are those counters: a parent's
    # TF_CPP_MIN_LOG_LEVEL=1 inherited by the worker would silently make every count 0
    worker_env={"TF_CPP_MIN_LOG_LEVEL": "0"},
    title="TensorFlow",
    module="tensorflow",
    type_modules=("tensorflow", "keras"),
    distributions={"tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly")},
    marker="s",
    modes=(
        ModeSpec("tf", "eager", False, "plain Python call on eager tensors", color="#8da0cb"),
        ModeSpec("tf", "graph", False, "tf.function(fn)", color="#1f5fa8"),
        ModeSpec("tf", "xla", True, "tf.function(fn, jit_compile=True)", baseline="graph",
                 color="#e6550d"),
        ModeSpec("tf", "autoclustering", True,
                 "tf.function(fn) called with global_jit_level ON_2 (what "
                 "--tf_xla_auto_jit=2 sets), in the worker of graph mode",
                 baseline="graph", color="#b2182b", label="auto-\nclustering",
                 floor_from="graph"),
    ),
)
