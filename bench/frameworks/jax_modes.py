"""JAX's modes, as data (imports no JAX; the adapter is ``jax_adapter.py``)."""

from jitbench.frameworks import FrameworkSpec, ModeSpec

# The modes of a step that changes flax NNX objects in place: op by op, and nnx.jit
NNX_MODES = ("eager", "jit")
# The modes of a Keras model on the JAX backend (jitbench.userfn.keras_model): its stateless
# step as fit runs it without JIT (eager) and with it (jit), and ahead of time
KERAS_JAX_MODES = ("eager", "jit", "aot")
# what eager and jit set on the model for an epoch of fit (aot has no fit of its own)
KERAS_JAX_FIT = {"eager": {"run_eagerly": True},
                 "jit": {"run_eagerly": False, "jit_compile": True}}

SPEC = FrameworkSpec(
    name="jax",
    counts_in_process=True,  # jax.monitoring events reach any listener in the process
    title="JAX",
    module="jax",
    type_modules=("jax", "jaxlib"),
    distributions={"jax": ("jax",), "jaxlib": ("jaxlib",)},
    marker="o",
    modes=(
        ModeSpec("jax", "eager", False, "op-by-op dispatch, no jax.jit", color="#66a61e"),
        ModeSpec("jax", "jit", True, "jax.jit(fn) of the whole function", baseline="eager",
                 color="#7b3294"),
        # ahead of time: lower + compile on the first call, then the executable called
        # directly, so jit's per-call signature check and cache lookup show beside it
        ModeSpec("jax", "aot", True, "jax.jit(fn).lower(*args).compile(), executable called "
                 "directly", baseline="eager", color="#c2a5cf", label="AOT"),
        # training steps only: the state's buffers given to XLA to reuse for the new state
        ModeSpec("jax", "donate", True, "jax.jit(step, donate_argnums=0): the state donated, "
                 "its buffers reused for the new state (training steps only)",
                 baseline="eager", color="#e7298a", label="jit+donate", stateful_only=True),
    ),
)
