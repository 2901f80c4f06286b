"""JAX: op-by-op (``eager``), ``jax.jit`` of the whole function (or of each stage), and ``aot``
(``jax.jit(f).lower(*args).compile()`` on the first call, then the compiled executable called
directly: no per-call signature check or cache lookup).

What compiled and why: JAX's own compile events (``jax.monitoring``) are counted per phase, and
``jax_explain_cache_misses`` is on, its log records (logger ``jax``) kept as short reasons for
:meth:`Adapter.compile_notes`. With ``JITBENCH_COMPILE_CACHE`` set (``--compile-cache``), JAX's
persistent compilation cache lives there with both thresholds lowered, so every program is
cached (by default programs compiling in under 1 s are not), and its hits/misses are counted.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from pathlib import Path

# Before JAX starts: do not grab most of the GPU up front, so peak memory means something and
# a TF worker after us still finds memory. A user's own setting wins.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402  (this module is only imported inside a JAX worker)
import jax.monitoring  # noqa: E402
import numpy as np  # noqa: E402

from jitbench.frameworks import (PRECISION_ENV, Stepping, TrainStep, compose,  # noqa: E402
                              device_index, effective_precision, nnx_object, train_step_of)
from jitbench.xla.hlo_text import NoProgram, Program  # noqa: E402

# JAX emits these while compiling; their count and durations are "what JIT really did".
_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
    "/jax/compilation_cache/cache_retrieval_time_sec": "cache_retrieval_s",
}
# persistent compilation cache events (no duration)
_CACHE_EVENTS = {"/jax/compilation_cache/cache_hits": "cache_hits",
                 "/jax/compilation_cache/cache_misses": "cache_misses"}
MAX_NOTES = 50  # reasons kept between two compile_notes() calls


def _reason(message: str) -> str:
    """The informative part of an explain-cache-misses record, on one line: "TRACING CACHE
    MISS at f.py:12 (g): | for h defined at f.py:3 | different input types: | * at x, now f32[4]
    and before f32[3]" -> "h: different input types: at x, now f32[4] and before f32[3]"."""
    lines = [ln.strip(" *|") for ln in message.splitlines()[1:] if ln.strip()]
    head = ""
    keep = []
    for ln in lines:
        m = re.match(r"for (\S+) defined at", ln) or re.match(r"(\S+) id=\d+ defined at", ln)
        if m and not head:
            head = m.group(1)
        elif not ln.startswith(("all previously seen", "For the closest")):
            keep.append(ln)
    text = " ".join(keep) or message.splitlines()[0]
    return f"{head}: {text}" if head else text


class _Notes(logging.Handler):
    """Keeps JAX's cache-miss explanations (WARNING records of ``jax._src.*``)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.notes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "CACHE MISS" in msg and len(self.notes) < MAX_NOTES:
            self.notes.append(_reason(msg))


class Adapter:
    framework = "jax"

    def __init__(self, log_path: str | None = None, own_process: bool = True):
        """``own_process=False``: a user's own session (jitbench.measure, the jit_benchmark
        fixture): its float64 switch and its logging stay as the user set them, so
        recompile reasons are not collected there."""
        # float64 workloads must really run in float64 (JAX silently downcasts otherwise)
        if own_process:
            jax.config.update("jax_enable_x64", True)
            if os.environ.get(PRECISION_ENV) == "highest":  # --matmul-precision highest
                jax.config.update("jax_default_matmul_precision", "highest")
        self._lock = threading.Lock()
        self._counters = {"compiles": 0, "compile_s": 0.0, "trace_s": 0.0, "lower_s": 0.0,
                          "traces": 0}
        jax.monitoring.register_event_duration_secs_listener(self._on_event)
        self._notes = _Notes()
        if own_process:
            jax.config.update("jax_explain_cache_misses", True)
            jax_logger = logging.getLogger("jax")
            jax_logger.addHandler(self._notes)
            # the explanations are data for the row, not chatter for the worker's log
            jax_logger.propagate = False
        self.compile_cache = os.environ.get("JITBENCH_COMPILE_CACHE") or None
        if self.compile_cache:
            jax.config.update("jax_compilation_cache_dir", self.compile_cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
            self._counters.update(cache_hits=0, cache_misses=0, cache_retrieval_s=0.0)
            jax.monitoring.register_event_listener(self._on_cache_event)

    def _on_event(self, event: str, duration: float, **kwargs) -> None:
        key = _EVENTS.get(event)
        if key is None:
            return
        with self._lock:
            self._counters[key] = self._counters.get(key, 0.0) + duration
            if key == "compile_s":  # also emitted around a persistent-cache hit
                self._counters["compiles"] += 1
            elif key == "trace_s":
                self._counters["traces"] += 1

    def _on_cache_event(self, event: str, **kwargs) -> None:
        key = _CACHE_EVENTS.get(event)
        if key is not None:
            with self._lock:
                self._counters[key] += 1

    def compile_notes(self) -> list[str]:
        """Why JAX traced or compiled since the last call, one short line per cache miss,
        e.g. ``"<lambda>: different input types: at x, now f32[4] and before f32[3]"``."""
        with self._lock:
            notes, self._notes.notes = self._notes.notes, []
        return notes

    def counters(self) -> dict[str, float]:
        with self._lock:
            return dict(self._counters)

    def _devices(self, device: str):
        try:
            return jax.devices(device)
        except RuntimeError:
            return []

    def device_available(self, device: str) -> tuple[bool, str]:
        if self._devices(device):
            return True, ""
        return False, f"JAX sees no {device} device (backends: {jax.default_backend()})"

    def _device(self, device: str):
        """The worker's device of kind ``device`` (``JITBENCH_DEVICE_INDEX``, else the
        first)."""
        devs = self._devices(device)
        return devs[min(device_index(), len(devs) - 1)]

    def device_scope(self, device: str):
        """``jax.default_device``: a builder's ``jnp.asarray`` constants land on the worker's
        device."""
        return jax.default_device(self._device(device))

    def place(self, arrays, device: str):
        dev = self._device(device)
        placed = [jax.device_put(a, dev) for a in arrays]
        jax.block_until_ready(placed)
        return placed

    def build(self, stages, mode: str, device: str):
        train = train_step_of(stages)
        if train is not None:
            return self._train(train, mode, device)
        if mode == "eager":
            return compose(stages)
        if mode == "jit":
            return compose([jax.jit(s, static_argnums=_static(s)) for s in stages])
        if mode == "aot":
            return compose([_aot(s) for s in stages])
        raise ValueError(f"unknown JAX mode {mode!r}")

    def _train(self, train: TrainStep, mode: str, device: str) -> Stepping:
        """A training step: the state placed once and carried from call to call."""
        step, init = train.make()
        if isinstance(init, dict) and init and all(map(nnx_object, init.values())):
            return self._in_place(step, list(init.values()), mode, train)
        if mode == "eager":
            fn = step
        elif mode == "jit":
            fn = jax.jit(step, static_argnums=_static(step))
        elif mode == "donate":
            fn = jax.jit(step, donate_argnums=0, static_argnums=_static(step))
        elif mode == "aot":
            fn = _aot(step)
        else:
            raise ValueError(f"unknown JAX mode {mode!r}")
        dev = self._device(device)
        state = None

        def restart():
            nonlocal state
            state = jax.block_until_ready(jax.device_put(init, dev))

        def call(*inputs):
            nonlocal state
            before = state
            out, state = fn(state, *inputs)
            if mode == "donate" and stepping.donation_held is None:
                # XLA took the buffers it could reuse and deleted them; one it could not use
                # (no output of that shape and dtype) stays, with JAX's warning
                old = jax.tree_util.tree_leaves(before)
                stepping.donation_held = f"{sum(a.is_deleted() for a in old)} of {len(old)}"
            return out

        restart()
        stepping = Stepping(call, restart, lambda: self.to_numpy(state), train,
                            pending=lambda: state)
        return stepping

    @staticmethod
    def returned_again(fn, args, position: int) -> int | None:
        """Which element of ``fn(*args)``'s tuple has the structure, shapes and dtypes of
        ``args[position]`` (its new value, as a training step returns its state), found by
        ``jax.eval_shape`` (nothing computed); None where none has."""
        static = _static(fn)
        shapes = jax.eval_shape(
            lambda *dyn: fn(*_merge(dyn, args, static)),
            *[a for i, a in enumerate(args) if i not in static])
        want = jax.tree_util.tree_structure(args[position])
        kinds = [(tuple(jax.numpy.shape(a)), jax.numpy.result_type(a))
                 for a in jax.tree_util.tree_leaves(args[position])]
        if not isinstance(shapes, tuple):
            return None
        for i, out in enumerate(shapes):
            if (jax.tree_util.tree_structure(out) == want
                    and [(tuple(o.shape), o.dtype) for o in jax.tree_util.tree_leaves(out)]
                    == kinds):
                return i
        return None

    def _in_place(self, fn, objects: list, mode: str, train: TrainStep) -> Stepping:
        """A user's step that changes flax NNX objects (a module, an optimizer) in place, as
        NNX writes it: op by op, or under ``nnx.jit`` (``jax.jit`` cannot change an object
        in place); their state saved once to restart from."""
        from flax import nnx

        if mode == "eager":
            call = fn
        elif mode == "jit":
            call = nnx.jit(fn)
        else:
            raise ValueError(f"mode {mode!r}: a step that changes flax NNX objects in place "
                             f"runs op by op or under nnx.jit")
        saved = jax.tree_util.tree_map(jax.numpy.array, nnx.state(objects))  # copies

        def restart():
            nnx.update(objects, jax.tree_util.tree_map(jax.numpy.array, saved))

        return Stepping(call, restart, lambda: self.to_numpy(nnx.state(objects).to_pure_dict()),
                        train, pending=lambda: nnx.state(objects))

    @staticmethod
    def reset() -> None:
        """Forget compiled code, so a group's first calls pay their compilation whatever ran
        before in this process (op-by-op mode caches each primitive process-wide)."""
        jax.clear_caches()

    @staticmethod
    def warmup_stages():
        """A tiny function unrelated to any workload (matmul and a few elementwise ops) on a
        (8, 8) float32 input; the worker runs it in each of its modes before its first group
        (process start-up cost)."""
        import jax.numpy as jnp

        def tiny(x):
            return jnp.sum(jnp.tanh(x @ x * 0.5 + 1.0) - x)

        return [tiny], [np.ones((8, 8), np.float32)]

    @staticmethod
    def dispatches_ahead(device: str) -> bool:
        """JAX dispatches asynchronously on every device: a call returns before its result."""
        return True

    @staticmethod
    def sync(out) -> None:
        jax.block_until_ready(out)

    @staticmethod
    def to_numpy(out):
        return jax.tree_util.tree_map(np.asarray, out)

    def classify(self, exc: BaseException, phase: str) -> str:
        text = f"{type(exc).__name__}: {exc}"
        if "RESOURCE_EXHAUSTED" in text or "Out of memory" in text:
            return "oom"
        if isinstance(exc, (jax.errors.ConcretizationTypeError,
                            jax.errors.TracerBoolConversionError,
                            jax.errors.TracerIntegerConversionError)):
            return "compile_error"
        # JaxRuntimeError; named XlaRuntimeError in older JAX
        if (phase == "first_call" and type(exc).__name__ in ("JaxRuntimeError", "XlaRuntimeError")
                and "compil" in text.lower()):
            return "compile_error"
        return "runtime_error"

    @staticmethod
    def user_state(fn, placed, device: str) -> tuple[list, None]:
        """The flax NNX objects among the arguments (modules, optimizers: a step changes them in
        place); none otherwise: a JAX function is pure, new state is returned."""
        return [a for a in placed if nnx_object(a)], None

    @staticmethod
    def mode_problem(mode: str, device: str) -> None:
        return None  # every JAX mode is a function transformation: any process runs it

    @staticmethod
    def mode_facts(mode: str, counters_first) -> dict:
        """Nothing beyond the counters: jax.jit either compiles the whole function or fails."""
        return {}

    def compiled_programs(self, stages, mode: str, device: str, placed,
                          graph: bool = False) -> list[Program]:
        """The optimized HLO and XLA cost analysis of each stage's program, after the stages
        ran: ``jax.jit``'s cache serves them, ``aot`` its own executables (no new compile).
        Later stages are lowered on the previous one's output shapes, so nothing runs.
        ``graph``: JAX renders none (``dot`` stays None; ``jitbench.xla.hlo_text.to_dot`` draws
        one)."""
        if train_step_of(stages) is not None:
            raise NoProgram("a training step: its programs are not captured yet")
        if mode == "eager":
            raise NoProgram("op-by-op: JAX dispatches (and compiles) each primitive on its "
                            "own; there is no XLA program of the whole function")
        args, programs = list(placed), []
        for i, stage in enumerate(stages):
            compiled = _AOT_BUILT.get(stage) if mode == "aot" else None
            if compiled is None:
                compiled = jax.jit(stage, static_argnums=_static(stage)).lower(*args).compile()
            programs.append(Program(f"{i}-{getattr(stage, '__name__', 'stage')}",
                                    compiled.as_text(), cost=_cost(compiled.cost_analysis()),
                                    memory=_memory(compiled)))
            outs = _out_shapes(compiled, stage, args)
            args = list(outs) if isinstance(outs, tuple) else [outs]
        return programs

    def profile(self, call, calls: int, out_dir: str) -> list[str]:
        """``calls`` synced calls of ``call`` under ``jax.profiler.trace``: an XSpace
        (``*.xplane.pb``: TensorBoard / XProf) and ``perfetto_trace.json.gz`` (Perfetto UI)."""
        with jax.profiler.trace(out_dir, create_perfetto_trace=True):
            for _ in range(calls):
                self.sync(call())
        return sorted(str(p) for p in Path(out_dir).rglob("*") if p.is_file())

    def versions(self) -> dict[str, str]:
        import jaxlib

        return {"jax": jax.__version__, "jaxlib": jaxlib.__version__}

    def device_info(self) -> list[dict[str, str]]:
        return [{"framework": "jax", "device": d.platform, "name": str(d),
                 "kind": getattr(d, "device_kind", "")} for d in jax.devices()]

    def reset_peak_memory(self, device: str) -> None:
        """None: JAX has no API to reset its peak counter, so no peak is a mode's own (the
        worker records the process's instead; ``compiled_memory_bytes`` is each JIT mode's)."""
        return None

    def peak_memory_bytes(self, device: str) -> int | None:
        """The process's peak device memory so far, where the device reports it (GPU); None on
        CPU. It never resets: the high-water mark of everything this worker ran."""
        stats = self._memory_stats(device)
        if not stats or "peak_bytes_in_use" not in stats:
            return None
        return int(stats["peak_bytes_in_use"])

    def matmul_precision(self, device: str, dtype: str) -> str:
        """``jax_default_matmul_precision`` (``JAX_DEFAULT_MATMUL_PRECISION``) and the device:
        at the default, float32 products run as TF32 on GPUs of compute capability 8.0 and
        later; ``highest`` (or ``float32``) keeps them in float32."""
        setting = str(jax.config.jax_default_matmul_precision or "default").lower()
        devs = self._devices(device)
        cc = _compute_capability(devs[0]) if devs else None
        return effective_precision(dtype, device, setting in ("highest", "float32"), cc)

    def _memory_stats(self, device: str):
        devs = self._devices(device)
        return devs[0].memory_stats() if devs else None


def _cost(analysis) -> dict[str, float] | None:
    """XLA's cost analysis as ``{"flops", "transcendentals", "bytes_accessed"}``; JAX returns
    a dict, or (older versions) a list with one dict per program."""
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else None
    if not analysis:
        return None
    return {"flops": float(analysis.get("flops", 0.0)),
            "transcendentals": float(analysis.get("transcendentals", 0.0)),
            "bytes_accessed": float(analysis.get("bytes accessed", 0.0))}


def _out_shapes(compiled, stage, args):
    """The shapes, dtypes and shardings of ``compiled``'s outputs (``Compiled.out_info``); a
    JAX without ``out_info`` (0.4.30) gets shapes and dtypes from ``jax.eval_shape`` of the
    stage (traced again, nothing runs) and the shardings from ``Compiled.output_shardings``."""
    outs = getattr(compiled, "out_info", None)
    if outs is None:
        static = _static(stage)
        shapes = jax.eval_shape(lambda *dyn: stage(*_merge(dyn, args, static)),
                                *[a for i, a in enumerate(args) if i not in static])
        return jax.tree_util.tree_map(
            lambda o, sharding: jax.ShapeDtypeStruct(o.shape, o.dtype, sharding=sharding),
            shapes, compiled.output_shardings)
    return jax.tree_util.tree_map(
        lambda o: jax.ShapeDtypeStruct(o.shape, o.dtype, sharding=o.sharding), outs)


def _compute_capability(device) -> float | None:
    """A CUDA device's compute capability as a number (``"9.0"`` -> 9.0); None elsewhere."""
    try:
        return float(getattr(device, "compute_capability", None))
    except (TypeError, ValueError):
        return None


def _memory(compiled) -> int | None:
    """XLA's memory analysis of a compiled program: its peak where JAX gives one, else
    arguments + outputs + temporaries + generated code - what outputs alias; None where the
    backend gives no analysis."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 -- not every backend or version has one
        return None
    if stats is None:
        return None
    peak = getattr(stats, "peak_memory_in_bytes", None)
    if peak:
        return int(peak)
    parts = ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
             "generated_code_size_in_bytes")
    return int(sum(getattr(stats, k, 0) or 0 for k in parts)
               - (getattr(stats, "alias_size_in_bytes", 0) or 0))


def _merge(dynamic, args, static) -> list:
    """``args`` with its non-static positions taken from ``dynamic``, in order."""
    it = iter(dynamic)
    return [a if i in static else next(it) for i, a in enumerate(args)]


def _static(stage) -> tuple[int, ...]:
    """The positions of a stage's static arguments (``stage.static_argnums``, see
    ``jitbench.define.workload.static_args``): jax.jit compiles once per distinct value there."""
    return tuple(getattr(stage, "static_argnums", ()))


# stage -> the executable ``aot`` compiled for it (weak: gone with the group's stages)
_AOT_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _aot(stage):
    """``stage`` compiled ahead of time on its first call's arguments, then called as the
    compiled executable. Lowering and compiling show in the usual counters (trace_s, lower_s,
    compile_s); a later call with another signature raises, as AOT executables do."""
    static = _static(stage)
    compiled = None

    def own(*xs):  # a function of its own: jit's caches, keyed on identity, do not serve it
        return stage(*xs)

    own.__name__ = f"aot_{getattr(stage, '__name__', 'stage')}"

    values = None

    def call(*xs):
        nonlocal compiled, values
        if compiled is None:
            compiled = jax.jit(own, static_argnums=static).lower(*xs).compile()
            values = tuple(xs[i] for i in static)
            _AOT_BUILT[stage] = compiled  # what compiled_programs shows, no compile again
        if static:
            if tuple(xs[i] for i in static) != values:
                raise TypeError(f"AOT executable compiled for static arguments {values}, "
                                f"called with {tuple(xs[i] for i in static)}")
            xs = tuple(x for i, x in enumerate(xs) if i not in static)
        return compiled(*xs)

    return call
