"""TensorFlow: eager, ``tf.function`` (graph), ``jit_compile=True`` (xla) and auto-clustering.

XLA's own log lines are the source of truth for what JIT did. The worker points fd 2 at a log
file before TensorFlow is imported; this adapter sets the verbosity that makes XLA log
"Built N clusters, size a / b" and "Compiled <cluster> n times, compile time: t us", and reads
the new lines each time ``counters()`` is called (never inside a timed sample).

Tracing is counted apart from compiling: ``traces`` sums ``experimental_get_tracing_count()``
of every ``tf.function`` this adapter built (graph-mode retracing shows there), and the first
call of each built function traces explicitly (``get_concrete_function``), timed as ``trace_s``,
so a first call splits into trace | XLA compile (from the log) | first run.

With ``JITBENCH_COMPILE_CACHE`` set (``--compile-cache``), TF's XLA persistent cache
(``--tf_xla_persistent_cache_directory``, TF >= 2.12) is pointed there: entries loaded count as
``cache_hits``, entries compiled and saved as ``cache_misses``.
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import sys
import time
import weakref

from jitbench.frameworks.tf_modes import CPU_GLOBAL_JIT

# Must be set before TensorFlow is imported (the worker imports this module first thing).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
os.environ.setdefault("TF_CPP_VMODULE", "mark_for_compilation_pass=2,"
                      "device_compilation_profiler=2,device_executable_persistor=1")
COMPILE_CACHE = os.environ.get("JITBENCH_COMPILE_CACHE") or None
if COMPILE_CACHE:  # appended to what the worker group set (auto-clustering's flags)
    os.environ["TF_XLA_FLAGS"] = " ".join(filter(None, (
        os.environ.get("TF_XLA_FLAGS", ""),
        f"--tf_xla_persistent_cache_directory={COMPILE_CACHE}")))


def _runtime_started() -> bool:
    """Whether TensorFlow's runtime already started in this process (its eager context made
    its devices: the first tensor, a device listing). TF reads TF_XLA_FLAGS then, so a flag
    added later changes nothing (checked with TF 2.21: importing alone is still early enough)."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context

    return bool(getattr(context.context(), "_initialized", True))


# Auto-clustering runs in the same process as graph mode, so the two are interleaved: this flag
# lets CPU clusters form at all, and each call says whether it wants them (_call_options).
# Without a global jit level (graph, xla) it changes nothing: no cluster forms. In a process
# TensorFlow already runs in (pytest's jit_benchmark, jitbench.measure on tensors) it is too late:
# CPU auto-clustering would silently be graph mode there (Adapter.mode_problem says so).
CPU_JIT_TOO_LATE = (CPU_GLOBAL_JIT not in os.environ.get("TF_XLA_FLAGS", "").split()
                    and _runtime_started())
if CPU_GLOBAL_JIT not in os.environ.get("TF_XLA_FLAGS", "").split():
    os.environ["TF_XLA_FLAGS"] = " ".join(filter(None, (os.environ.get("TF_XLA_FLAGS", ""),
                                                       CPU_GLOBAL_JIT)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import config_pb2  # noqa: E402
from tensorflow.python.eager import context as tf_context  # noqa: E402

from jitbench.frameworks import (PRECISION_ENV, Stepping, TrainStep, compose,  # noqa: E402
                              device_index, effective_precision, train_step_of)
from jitbench.xla.dump_reader import DumpReader  # noqa: E402
from jitbench.xla.hlo_text import NoProgram, Program  # noqa: E402

_COMPILED = re.compile(r"Compiled (\S+) \d+ times, compile time: (\d+) us")
_BUILT = re.compile(r"Built (\d+) clusters, size (\d+) / (\d+)")
_CACHE_HIT = "Loading cached entry for:"
_CACHE_SAVED = "Serializing and saving cache entry:"

# global_jit_level each mode's calls carry; the others run with OFF. ON_2 is what
# --tf_xla_auto_jit=2 sets for a whole process.
_JIT_LEVEL = {"autoclustering": config_pb2.OptimizerOptions.ON_2}


def _call_options(level):
    """This thread's default tf.function call options with ``global_jit_level`` = ``level``.
    TF reads them at each call (``context.call_function``) and instantiates a function once
    per distinct options, so two modes' functions get two programs (tf 2.21)."""
    base = tf_context.context().function_call_options
    config = config_pb2.ConfigProto.FromString(base.config_proto_serialized)
    config.graph_options.optimizer_options.global_jit_level = level
    return tf_context.FunctionCallOptions(executor_type=base.executor_type,
                                          config_proto=config)


# auto-clustering's modules in XLA's dump; jit_compile=True ones are a_inference_..._XlaMustCompile
_CLUSTER_MODULES = "^cluster_[0-9]+__XlaCompiledKernel"
_NO_COST = ("TensorFlow's compiler IR (experimental_get_compiler_ir) gives no XLA cost "
            "analysis")

_COMPILE_MARKERS = ("XLA compilation", "JIT compilation failed", "jit_compile",
                    "Detected unsupported operations", "XLA can't deduce compile time constant",
                    "compile-time constant", "Compilation failure", "not compilable")


class Adapter:
    framework = "tf"

    def __init__(self, log_path: str | None = None, own_process: bool = True):
        """``own_process=False``: a user's own session; nothing to change in it (the XLA dump
        below is only ever set up in a worker, which has a ``log_path``)."""
        self._log_path = log_path
        # before XLA's first compile: the only view of auto-clustering's clusters. Only in a
        # worker (it owns its process, log_path given): in a user's process XLA_FLAGS would
        # leak into every subprocess it starts later, each then reading our dump folder
        self._dump = DumpReader.install(os.environ, log_path, _CLUSTER_MODULES) \
            if log_path else None
        self._offset = 0
        self._counters = {"compiles": 0, "compile_s": 0.0, "clusters": 0,
                          "clustered_nodes": 0, "graph_nodes": 0, "trace_s": 0.0}
        if COMPILE_CACHE:
            self._counters.update(cache_hits=0, cache_misses=0)
        # (weak ref to a tf.function, its tracing count when last read): a function that
        # is gone keeps its last count, so the total never goes down
        self._functions: list[list] = []
        if own_process:  # a user's runtime is never reconfigured (TF refuses once it started)
            for gpu in tf.config.list_physical_devices("GPU"):
                tf.config.experimental.set_memory_growth(gpu, True)
            if os.environ.get(PRECISION_ENV) == "highest":  # --matmul-precision highest
                tf.config.experimental.enable_tensor_float_32_execution(False)
        self._options = {level: _call_options(level) for level in set(_JIT_LEVEL.values())
                         | {config_pb2.OptimizerOptions.OFF}}

    def counters(self) -> dict[str, float]:
        if self._log_path and os.path.exists(self._log_path):
            with open(self._log_path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
            # only whole lines; a half-written line is read next time
            end = chunk.rfind(b"\n") + 1
            self._offset += end
            for line in chunk[:end].decode("utf-8", "replace").splitlines():
                m = _COMPILED.search(line)
                if m:
                    self._counters["compiles"] += 1
                    self._counters["compile_s"] += int(m.group(2)) / 1e6
                    continue
                m = _BUILT.search(line)
                if m:
                    self._counters["clusters"] += int(m.group(1))
                    self._counters["clustered_nodes"] += int(m.group(2))
                    self._counters["graph_nodes"] += int(m.group(3))
                elif COMPILE_CACHE and _CACHE_HIT in line:
                    self._counters["cache_hits"] += 1
                elif COMPILE_CACHE and _CACHE_SAVED in line:
                    self._counters["cache_misses"] += 1
        out = dict(self._counters)
        out["traces"] = self._traces()
        return out

    def _traces(self) -> int:
        for entry in self._functions:
            fn = entry[0]()
            if fn is not None:
                entry[1] = fn.experimental_get_tracing_count()
        return sum(entry[1] for entry in self._functions)

    def _function(self, stage, **kwargs):
        """``tf.function(stage, **kwargs)``, its tracing counted, its first call split: the
        trace (``get_concrete_function``) timed apart, then the call (compile + run)."""
        fn = tf.function(stage, **kwargs)
        self._functions.append([weakref.ref(fn), 0])
        pending = [True]
        counters = self._counters

        def call(*xs):
            if pending[0]:
                pending[0] = False
                t0 = time.perf_counter()
                fn.get_concrete_function(*xs)
                counters["trace_s"] += time.perf_counter() - t0
            return fn(*xs)

        def split_next_call():
            pending[0] = True

        call.split_next_call = split_next_call
        return call

    @staticmethod
    def _tf_device(device: str) -> str:
        """``/GPU:i`` or ``/CPU:i``, i the worker's device index (``JITBENCH_DEVICE_INDEX``)."""
        return f"/{'GPU' if device == 'gpu' else 'CPU'}:{device_index()}"

    def device_scope(self, device: str):
        """``tf.device``: a builder's ``tf.constant`` constants land on the worker's device."""
        return tf.device(self._tf_device(device))

    def device_available(self, device: str) -> tuple[bool, str]:
        kind = "GPU" if device == "gpu" else "CPU"
        if tf.config.list_logical_devices(kind):
            return True, ""
        return False, f"TensorFlow sees no {kind} device (built with CUDA: " \
                      f"{tf.test.is_built_with_cuda()})"

    def place(self, arrays, device: str):
        with tf.device(self._tf_device(device)):
            placed = [tf.identity(tf.constant(a)) for a in arrays]
        self.sync(placed)
        return placed

    def build(self, stages, mode: str, device: str):
        train = train_step_of(stages)
        if train is not None:
            return self._train(train, mode, device)
        if mode == "eager":
            parts = list(stages)
        elif mode in ("graph", "autoclustering"):
            # auto-clustering is graph mode called with a global jit level (on_device below)
            parts = [self._function(s) for s in stages]
        elif mode == "xla":
            parts = [self._function(s, jit_compile=True) for s in stages]
        else:
            raise ValueError(f"unknown TensorFlow mode {mode!r}")
        fn = compose(parts)
        dev = self._tf_device(device)
        options = self._options[_JIT_LEVEL.get(mode, config_pb2.OptimizerOptions.OFF)]
        ctx = tf_context.context()

        def on_device(*xs):
            # every mode sets its own call options for its call (two attribute stores), so
            # auto-clustering is on for its calls only, in the same process as graph mode,
            # and the thread's own options (a user's session: their tf.functions) come back
            before = ctx.function_call_options
            ctx.function_call_options = options
            try:
                with tf.device(dev):
                    return fn(*xs)
            finally:
                ctx.function_call_options = before

        if all(hasattr(p, "split_next_call") for p in parts):
            # a sweep calls this before each new signature: its trace is timed apart too
            on_device.split_next_call = lambda: [p.split_next_call() for p in parts]
        return on_device

    def _train(self, train: TrainStep, mode: str, device: str) -> Stepping:
        """A training step: variables made on the device, initial values kept to restart."""
        with tf.device(self._tf_device(device)):
            step, state = train.make()
        initial = tf.nest.map_structure(lambda v: v.numpy(), state)
        return Stepping(self.build([step], mode, device),
                        lambda: tf.nest.map_structure(lambda v, a: v.assign(a), state, initial),
                        lambda: tf.nest.map_structure(lambda v: v.numpy(), state), train)

    def reset(self) -> None:
        """Forget the eager op kernels, so a group's first eager call creates its kernels
        whatever ran before in this process (each mode is built as fresh tf.function objects
        per group anyway), and the clusters compiled so far (:meth:`compiled_programs`)."""
        tf_context.context().clear_kernel_cache()
        if self._dump is not None:
            self._dump.mark()

    @staticmethod
    def warmup_stages():
        """A tiny function unrelated to any workload (matmul and the common elementwise ops
        and reductions: enough for auto-clustering to form a cluster), on a (8, 8) float32
        input; the worker runs it in each of its modes before its first group (process
        start-up cost). The first eager use of an op type costs ~4-6 ms whatever the shape
        (docs/lab/tf-eager-first-call/tf_eager_first_call.py: without relu here, the first group using relu
        paid 5.1-7.7 ms for a first call that costs 1.6-2.4 ms in any later group)."""
        def tiny(x):
            y = tf.matmul(x, x) * 0.5 + 1.0
            return tf.reduce_sum(tf.tanh(y) - x) + tf.reduce_mean(
                tf.exp(-tf.nn.relu(tf.maximum(y, 0.0))))

        return [tiny], [np.ones((8, 8), np.float32)]

    @staticmethod
    def dispatches_ahead(device: str) -> bool:
        """TensorFlow runs a call's ops on a CPU before it returns; a GPU's kernels queue."""
        return device == "gpu"

    @staticmethod
    def sync(out) -> None:
        # waits for every op on every device; .numpy() would add a device-to-host copy
        tf.test.experimental.sync_devices()

    @staticmethod
    def to_numpy(out):
        # .numpy() first: a bfloat16 scalar tensor's __array__ hands back a scalar, which
        # np.asarray refuses
        return tf.nest.map_structure(
            lambda t: np.asarray(t.numpy() if hasattr(t, "numpy") else t), out)

    def classify(self, exc: BaseException, phase: str) -> str:
        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, tf.errors.ResourceExhaustedError) or "RESOURCE_EXHAUSTED" in text:
            return "oom"
        if any(m in text for m in _COMPILE_MARKERS):
            return "compile_error"
        return "runtime_error"

    def user_state(self, fn, placed, device: str) -> tuple[list, str | None]:
        """The ``tf.Variable``s ``fn`` captures, read or assigned (a Keras model's weights, its
        optimizer's slots and iteration count), from one trace of ``fn`` as a ``tf.function``
        (not run: a variable a Keras optimizer creates on its first step is created here, at
        its initial value). ``([], why)`` when ``fn`` cannot be traced."""
        try:
            with tf.device(self._tf_device(device)):
                concrete = tf.function(fn).get_concrete_function(*placed)
        except Exception as exc:  # noqa: BLE001 -- the row says why the state is unknown
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            return [], (f"tracing it as a tf.function to find its variables failed "
                        f"({type(exc).__name__}: {first})")
        return list(concrete.variables), None

    @staticmethod
    def mode_problem(mode: str, device: str) -> str | None:
        if mode == "autoclustering" and device == "cpu" and CPU_JIT_TOO_LATE:
            return (f"tf autoclustering on cpu needs TF_XLA_FLAGS='{CPU_GLOBAL_JIT}' before "
                    f"TensorFlow starts (its first tensor), and TensorFlow already ran in this "
                    f"process without it (it would run as plain graph mode); the flag changes "
                    f"no other mode, so set it in the environment this process starts with")
        return None

    def mode_facts(self, mode: str, counters_first) -> dict:
        formed = int(counters_first.get("clusters", 0))
        if mode != "autoclustering":
            if formed and mode == "graph":  # a user's TF_XLA_FLAGS turned it on everywhere
                return {"clusters_formed": formed,
                        "note": f"auto-clustering formed {formed} XLA cluster(s) in graph mode: "
                                f"TF_XLA_FLAGS='{os.environ.get('TF_XLA_FLAGS', '')}' turns it "
                                f"on for every function"}
            return {}
        # auto-clustering may silently cluster nothing: then "JIT on" was plain graph mode
        facts = {"clusters_formed": formed, "jit_happened": formed > 0}
        if formed == 0:
            facts["note"] = ("no JIT happened (same program as graph): no XLA cluster formed "
                             "(TF's minimum cluster size is 4 ops)")
        return facts

    def compiled_programs(self, stages, mode: str, device: str, placed,
                          graph: bool = False) -> list[Program]:
        """``xla``: each stage's optimized HLO from ``experimental_get_compiler_ir`` (one more
        compile per stage, outside any timing; later stages on the previous one's output
        specs; ``graph``: XLA's own Graphviz rendering too, one compile more).
        ``autoclustering``: the clusters XLA compiled since :meth:`reset`, from its dump.
        No cost analysis: TF's compiler IR has none."""
        if mode == "autoclustering":
            if self._dump is None:
                raise NoProgram("auto-clustering's clusters are read from XLA's dump, which "
                                "only a jitbench worker process sets up")
            programs = self._dump.new_programs()
            if not programs:
                raise NoProgram("auto-clustering compiled no XLA cluster: the function ran "
                                "as plain graph mode")
            return programs
        if mode == "eager":
            raise NoProgram("op-by-op: each op runs TensorFlow's own kernel; there is no XLA "
                            "program")
        if mode == "xla" and train_step_of(stages) is not None:
            raise NoProgram("a training step: its program is not captured yet")
        if mode != "xla":
            raise NoProgram(f"{mode} mode runs TensorFlow's own kernels (a graph of ops, no "
                            f"XLA): there is no XLA program")
        args, programs = list(placed), []
        with tf.device(self._tf_device(device)):
            for i, stage in enumerate(stages):
                # a closure without defaults: the compiler IR binds no default arguments
                fn = tf.function(_plain(stage), jit_compile=True)
                ir = fn.experimental_get_compiler_ir(*args)
                programs.append(Program(
                    f"{i}-{getattr(stage, '__name__', 'stage')}", ir(stage="optimized_hlo"),
                    dot=ir(stage="optimized_hlo_dot") if graph else None, cost_note=_NO_COST))
                outs = fn.get_concrete_function(*args).structured_outputs
                args = [tf.TensorSpec(o.shape, o.dtype) for o in tf.nest.flatten(outs)]
        return programs

    def profile(self, call, calls: int, out_dir: str) -> list[str]:
        """``calls`` synced calls of ``call`` under ``tf.profiler.experimental``: an XSpace
        (``*.xplane.pb``: TensorBoard / XProf) and, converted by TF's profiler plugin, a
        Chrome trace ``trace.json.gz`` (Perfetto UI, chrome://tracing)."""
        tf.profiler.experimental.start(out_dir)
        try:
            for _ in range(calls):
                self.sync(call())
        finally:
            tf.profiler.experimental.stop()
        for xplane in glob.glob(os.path.join(out_dir, "**", "*.xplane.pb"), recursive=True):
            _chrome_trace(xplane)
        return sorted(p for p in glob.glob(os.path.join(out_dir, "**", "*"), recursive=True)
                      if os.path.isfile(p))

    def versions(self) -> dict[str, str]:
        build = tf.sysconfig.get_build_info()
        out = {"tensorflow": tf.__version__}
        for key in ("cuda_version", "cudnn_version"):
            if build.get(key):
                out[f"tf_{key}"] = str(build[key])
        return out

    def device_info(self) -> list[dict[str, str]]:
        out = []
        for d in tf.config.list_physical_devices():
            details = tf.config.experimental.get_device_details(d)  # {} for a CPU
            out.append({"framework": "tf", "device": d.device_type.lower(), "name": d.name,
                        "kind": str(details.get("device_name", ""))})
        return out

    def reset_peak_memory(self, device: str) -> int | None:
        """A new peak window on the GPU (``reset_memory_stats``: the peak restarts at what is
        in use); the bytes in use then (inputs, kept outputs, variables), or None on CPU."""
        if device != "gpu":
            return None
        tf.config.experimental.reset_memory_stats(f"GPU:{device_index()}")
        return int(tf.config.experimental.get_memory_info(f"GPU:{device_index()}")["current"])

    @staticmethod
    def matmul_precision(device: str, dtype: str) -> str:
        return _tf_precision(device, dtype)

    def peak_memory_bytes(self, device: str) -> int | None:
        """Peak device memory since ``reset_peak_memory`` on GPU; None on CPU, where TF
        keeps no such statistics."""
        if device != "gpu":
            return None
        return int(tf.config.experimental.get_memory_info(f"GPU:{device_index()}")["peak"])


def _tf_precision(device: str, dtype: str) -> str:
    """``tf.config.experimental.tensor_float_32_execution_enabled()`` (on by default) and the
    first GPU's compute capability (``get_device_details``)."""
    cc = None
    gpus = tf.config.list_physical_devices("GPU") if device == "gpu" else []
    if gpus:
        found = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
        if found:
            cc = float(found[0]) + float(found[1]) / 10
    full = not tf.config.experimental.tensor_float_32_execution_enabled()
    return effective_precision(dtype, device, full, cc)


def _plain(stage):
    return lambda *xs: stage(*xs)


def _chrome_trace(xplane: str) -> None:
    """``trace.json.gz`` beside an XSpace, by the converter TensorBoard's profile plugin uses;
    skipped (the XSpace stays) where this TF build lacks it."""
    try:
        from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

        data, ok = plugin.xspace_to_tools_data([xplane], "trace_viewer@", {})
    except (ImportError, AttributeError, RuntimeError):
        return
    if ok and data:
        with gzip.open(os.path.join(os.path.dirname(xplane), "trace.json.gz"), "wb") as fh:
            fh.write(data if isinstance(data, bytes) else data.encode())
