"""Framework adapters: how to place inputs, build each mode, sync and count compilations.

A framework is two modules here:

- ``<name>_modes.py`` declares its modes as :class:`ModeSpec` data. It imports no framework, so
  the CLI, the registry and the report can read it anywhere.
- ``<name>_adapter.py`` implements :class:`Adapter`. It imports the framework at module level
  and is only ever imported inside a worker process (TensorFlow and JAX never share a process),
  through :func:`get_adapter`.

Adding a framework (say PyTorch with ``torch.compile``) is: ``torch_modes.py``,
``torch_adapter.py``, its name in :data:`FRAMEWORKS`, and a ``torch`` builder in each suite.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Mapping, Protocol, Sequence

FRAMEWORKS = ("tf", "jax")  # each has <name>_modes.py and <name>_adapter.py beside this file
# --matmul-precision: what a worker sets its framework's float32 matrix products to before any
# case; "default" leaves the framework's own default (TF32 on Ampere and later GPUs)
PRECISION_ENV = "JITBENCH_MATMUL_PRECISION"
# which device of its kind a worker measures on (0: the first GPU; a machine with several
# GPUs gives each worker its own); every input, constant and state of its cases goes there
DEVICE_INDEX_ENV = "JITBENCH_DEVICE_INDEX"
MATMUL_PRECISIONS = ("default", "highest")
TF32_MIN_COMPUTE_CAPABILITY = 8.0  # TF32 tensor cores: Ampere (sm_80) and later


def effective_precision(dtype: str, device: str, full_float32: bool,
                        compute_capability: float | None) -> str:
    """What a ``dtype`` matrix product runs at on ``device``: ``float64`` for float64,
    ``tf32`` for float32 on a GPU of compute capability 8.0 or later unless the framework was
    told to compute in full float32 (``full_float32``), else ``float32``. Other dtypes
    (float16, bf16) run at their own."""
    if dtype != "float32":
        return {"bfloat16": "bf16"}.get(dtype, dtype)
    if device != "gpu" or full_float32 or compute_capability is None:
        return "float32"
    return "tf32" if compute_capability >= TF32_MIN_COMPUTE_CAPABILITY else "float32"


@dataclasses.dataclass(frozen=True)
class ModeSpec:
    """One point on the JIT axis, as a framework declares it.

    ``worker_group``: the process environment the mode needs; modes sharing a group run in one
    worker and are interleaved. ``env``: variables that group's worker sets before importing the
    framework. ``baseline``: for a JIT-on mode, the JIT-off mode it is compared with first.
    ``floor_from``: a mode whose dispatch floor the calibration borrows (same program shape).
    """

    framework: str
    name: str
    jit: bool
    how: str
    worker_group: str = "default"
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    baseline: str | None = None
    color: str = "#777777"
    label: str = ""
    floor_from: str | None = None
    stateful_only: bool = False  # only for workloads whose stages are TrainSteps (donation)

    def __post_init__(self):
        if not self.label:
            object.__setattr__(self, "label", self.name)


@dataclasses.dataclass(frozen=True)
class FrameworkSpec:
    """What a ``<name>_modes.py`` module exports as ``SPEC``.

    ``modes``: in display order; the JIT-off ones in the order a JIT-on output is compared
    with them. ``counts_in_process``: the adapter's compile counters work in a process it does
    not own (pytest's); False when they need the worker's redirected log (TF).
    ``worker_env``: variables a worker process of this framework must have whatever its parent
    set (the parent may be a user's session or a test that quieted the framework's logs).
    ``title``: its name in sentences. ``module``: its top-level import name (in ``sys.modules``
    once a process runs it). ``type_modules``: top-level modules of its array types, to tell a
    user's inputs apart without importing anything. ``distributions``: the versions that describe
    an install, as {name shown: pip names to try}. ``marker``: its matplotlib marker in figures."""

    name: str
    modes: tuple[ModeSpec, ...]
    counts_in_process: bool = True
    worker_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    title: str = ""
    module: str = ""
    type_modules: tuple[str, ...] = ()
    distributions: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    marker: str = "o"


def framework_specs() -> dict[str, FrameworkSpec]:
    """Every framework's declarations, by name (light: imports no framework)."""
    return {name: importlib.import_module(f"jitbench.frameworks.{name}_modes").SPEC
            for name in FRAMEWORKS}


def not_installed(framework: str) -> str | None:
    """Why ``framework`` cannot run in this interpreter (its package is not installed), with
    the command that installs it; None when it is found (found, not imported)."""
    import importlib.util

    spec = framework_specs()[framework]
    try:
        found = importlib.util.find_spec(spec.module) is not None
    except (ImportError, ValueError):  # a broken or hidden package: as good as absent
        found = False
    if found:
        return None
    return (f"{spec.title} is not installed in this environment: pip install "
            f"\"jitbench[{framework}]\"")


def nnx_object(x: Any) -> bool:
    """A flax NNX object (a module, an optimizer: its class or a base is flax.nnx's
    ``Pytree``/``Object``), told without importing flax: a step changes it in place."""
    return any(c.__module__.startswith("flax.nnx") and c.__name__ in ("Pytree", "Object")
               for c in type(x).__mro__)


def installed() -> list[str]:
    """The frameworks whose package is installed here."""
    return [name for name in FRAMEWORKS if not_installed(name) is None]


class Adapter(Protocol):
    """What the harness needs from a framework; one instance per worker process.

    The timing core never knows which framework it is timing: it calls ``build``'s callables
    and ``sync``. Every method is called outside the timed region except ``sync``."""

    framework: str

    def device_available(self, device: str) -> tuple[bool, str]:
        """(True, "") or (False, why), e.g. ``(False, "JAX sees no gpu device")``."""

    def place(self, arrays: Sequence[Any], device: str) -> list[Any]:
        """numpy arrays -> framework arrays on ``device``, transfer finished on return:
        ``place([np.ones(3)], "cpu") -> [Array([1., 1., 1.])]``."""

    def build(self, stages: Sequence[Callable], mode: str, device: str) -> Callable:
        """A callable running ``stages`` chained (see :func:`compose`) in ``mode``:
        ``build([f], "jit", "cpu")(*placed)`` is ``jax.jit(f)(*placed)``."""

    def warmup_stages(self) -> tuple[list[Callable], list[Any]]:
        """(stages, numpy inputs) of a tiny function unrelated to any workload, which a worker
        runs in each of its modes before its first group (``jitbench.run.worker_warmup``), e.g.
        ``([lambda x: jnp.sum(jnp.tanh(x @ x))], [np.ones((8, 8), np.float32)])``."""

    def dispatches_ahead(self, device: str) -> bool:
        """Whether a call on ``device`` may return before its work is done, so calls back to
        back overlap (JAX: always; TF: on a GPU); the protocol samples such modes longer."""

    def sync(self, out: Any) -> None:
        """Wait until the device has finished everything, e.g. ``jax.block_until_ready(out)``;
        never a device-to-host copy."""

    def counters(self) -> dict[str, float]:
        """Cumulative compile counters since the adapter started, e.g.
        ``{"compiles": 3, "compile_s": 0.21}``; the timing core diffs them per phase."""

    def reset(self) -> None:
        """Forget compiled code before a new case group (``jax.clear_caches()``)."""

    def to_numpy(self, out: Any) -> Any:
        """A framework output (or a tuple of them) as numpy."""

    def classify(self, exc: BaseException, phase: str) -> str:
        """A row status for an exception: ``"compile_error"``, ``"oom"`` or
        ``"runtime_error"``."""

    def mode_problem(self, mode: str, device: str) -> str | None:
        """Why ``mode`` cannot run as itself in this process (one the adapter did not start
        before the framework: pytest, a notebook), or None, e.g. ``"tf autoclustering on
        cpu needs TF_XLA_FLAGS='--tf_xla_cpu_global_jit' before TensorFlow starts ..."``."""

    def user_state(self, fn: Callable, placed: Sequence[Any], device: str
                   ) -> tuple[list[Any], str | None]:
        """(the state a user's ``fn(*placed)`` reads or updates in place, why it cannot be
        found or None): TF's ``tf.Variable``s, found by tracing ``fn`` once as a
        ``tf.function`` (a Keras model's weights, its optimizer's slots and step); ``([],
        None)`` where functions are pure (JAX: new state is returned, not assigned)."""

    def mode_facts(self, mode: str, counters_first: Mapping[str, float]) -> dict[str, Any]:
        """Extra row fields about what a mode really did on its first call, e.g.
        ``{"clusters_formed": 0, "note": "no XLA cluster formed ..."}``; ``{}`` if none."""

    def compiled_programs(self, stages: Sequence[Callable], mode: str, device: str,
                          placed: Sequence[Any], graph: bool = False) -> list[Any]:
        """The XLA programs one call of ``mode`` runs, after it ran (outside the timing), as
        :class:`jitbench.xla.hlo_text.Program` (optimized HLO text, cost analysis where there is
        one,
        XLA's Graphviz rendering with ``graph`` where there is one), one per stage in call
        order; raises :class:`jitbench.xla.hlo_text.NoProgram` ("op-by-op: ...") where there is
        none:
        ``compiled_programs([f], "jit", "cpu", placed)[0].hlo.startswith("HloModule")``."""

    def profile(self, call: Callable[[], Any], calls: int, out_dir: str) -> list[str]:
        """Record a profiler trace of ``calls`` synced calls of ``call`` into ``out_dir``;
        the files written, an XSpace ``*.xplane.pb`` among them."""

    def versions(self) -> dict[str, str]:
        """``{"jax": "0.4.35", "jaxlib": "0.4.35"}``."""

    def device_info(self) -> list[dict[str, str]]:
        """One dict per device: framework, device, name, kind."""

    def reset_peak_memory(self, device: str) -> int | None:
        """Start a new peak-memory window where the framework can (TF on a GPU) and return
        the bytes in use at its start; None where the peak cannot be reset (JAX: its peak is
        the process's) or the device keeps no statistics (CPU)."""

    def peak_memory_bytes(self, device: str) -> int | None:
        """Peak device memory since :meth:`reset_peak_memory` (or, where it cannot reset, of
        the whole process); None where unknown (CPU)."""

    def device_scope(self, device: str) -> Any:
        """A context manager under which arrays a workload's builder makes (its constants) land
        on the worker's ``device`` (of index ``JITBENCH_DEVICE_INDEX``), not on the framework's
        default device: ``with adapter.device_scope("cpu"): stages = builder(...)``."""

    def matmul_precision(self, device: str, dtype: str) -> str:
        """What ``dtype`` matrix products run at on ``device`` in this process, from the
        framework's setting and the device (:func:`effective_precision`): ``"tf32"`` for
        float32 on an H100 at the frameworks' default, ``"float32"`` on a CPU."""


def device_index(environ: Mapping[str, str] | None = None) -> int:
    """The worker's device index (:data:`DEVICE_INDEX_ENV`, default 0)."""
    import os

    text = (os.environ if environ is None else environ).get(DEVICE_INDEX_ENV, "0")
    try:
        return max(0, int(text))
    except ValueError:
        return 0


def get_adapter(framework: str, log_path: str | None = None, **options) -> Adapter:
    """The adapter of ``framework``; ``options`` go to its constructor (JAX: ``own_process``)."""
    module = importlib.import_module(f"jitbench.frameworks.{framework}_adapter")
    return module.Adapter(log_path=log_path, **options)


@dataclasses.dataclass(frozen=True)
class TrainStep:
    """A stage that trains: state that every call updates (weights, optimizer slots, batch-norm
    statistics). ``make()`` is called once per build, on the target device, and returns
    ``(step, state)``:

    - JAX (functional): ``step(state, *inputs) -> (output, new_state)``; ``state`` the initial
      state, a pytree of numpy arrays. The adapter places it once, applies the mode to
      ``step`` (``donate``: ``jax.jit(step, donate_argnums=0)``) and carries the state from
      call to call, outside the timed function's arguments.
    - TF (in place): ``step(*inputs) -> output`` assigns ``tf.Variable``s; ``state`` a pytree
      (dict/list) of every variable it updates, all created already (build the optimizer's
      slots first). The adapter saves their initial values.

    The answer checked is ``(output of step k, shown(state after step k))`` from the initial
    state, ``k = check_steps``: the workload's reference computes the same k steps.
    ``shown(state)``: the part of the state compared (default all of it), with the same
    nesting in every framework."""

    make: Callable[[], tuple[Callable, Any]]
    shown: Callable[[Any], Any] | None = None
    check_steps: int = 3


class Stepping:
    """A built :class:`TrainStep` in one mode: call it with the inputs (one step, state carried
    to the next call); :meth:`answer` restarts from the initial state and runs ``check_steps``
    steps. ``restart()`` and ``read()`` (the state as numpy) come from the adapter;
    ``pending()``, where the framework computes asynchronously, the live state a sync must wait
    for too (a step is done when its state is, not when its loss is: op by op, the optimizer's
    updates run after the loss)."""

    def __init__(self, call: Callable, restart: Callable[[], None], read: Callable[[], Any],
                 train: TrainStep, pending: Callable[[], Any] | None = None):
        self._call, self.restart, self.read, self.train = call, restart, read, train
        self.pending = pending
        # a mode that donates the state: how many of its buffers XLA took on the first call
        # ("N of M"; None where nothing is donated)
        self.donation_held: str | None = None

    def __call__(self, *inputs):
        return self._call(*inputs)

    def answer(self, *inputs, to_numpy: Callable[[Any], Any] = lambda x: x) -> tuple[Any, Any]:
        self.restart()
        out = None
        for _ in range(self.train.check_steps):
            out = self._call(*inputs)
        state = self.read()
        return to_numpy(out), (self.train.shown(state) if self.train.shown else state)


def train_step_of(stages: Sequence[Any]) -> TrainStep | None:
    """The :class:`TrainStep` when ``stages`` is one (a training step has a single stage)."""
    if len(stages) == 1 and isinstance(stages[0], TrainStep):
        return stages[0]
    if any(isinstance(s, TrainStep) for s in stages):
        raise ValueError("a TrainStep must be the only stage of its workload's builder")
    return None


def compose(stages):
    """Chain stages: the first gets the inputs, each next one the previous output."""
    if len(stages) == 1:
        return stages[0]

    def run(*xs):
        out = stages[0](*xs)
        for stage in stages[1:]:
            out = stage(*out) if isinstance(out, tuple) else stage(out)
        return out

    return run
