"""JAX: op-by-op (``eager``) and ``jax.jit`` of the whole function (or of each stage)."""

from __future__ import annotations

import os
import threading

# Before JAX starts: do not grab most of the GPU up front, so peak memory means something and
# a TF worker after us still finds memory. A user's own setting wins.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402  (this module is only imported inside a JAX worker)
import jax.monitoring  # noqa: E402
import numpy as np  # noqa: E402

from . import compose  # noqa: E402

# JAX emits these while compiling; their count and durations are "what JIT really did".
_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
}


class Adapter:
    framework = "jax"

    def __init__(self, log_path: str | None = None):
        # float64 workloads must really run in float64 (JAX silently downcasts otherwise)
        jax.config.update("jax_enable_x64", True)
        self._lock = threading.Lock()
        self._counters = {"compiles": 0, "compile_s": 0.0, "trace_s": 0.0, "lower_s": 0.0}
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, event: str, duration: float, **kwargs) -> None:
        key = _EVENTS.get(event)
        if key is None:
            return
        with self._lock:
            self._counters[key] += duration
            if key == "compile_s":
                self._counters["compiles"] += 1

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

    def place(self, arrays, device: str):
        dev = self._devices(device)[0]
        placed = [jax.device_put(a, dev) for a in arrays]
        jax.block_until_ready(placed)
        return placed

    def build(self, stages, mode: str, device: str):
        if mode == "eager":
            return compose(stages)
        if mode == "jit":
            return compose([jax.jit(s) for s in stages])
        raise ValueError(f"unknown JAX mode {mode!r}")

    @staticmethod
    def reset() -> None:
        """Forget compiled code, so a group's first calls pay their compilation whatever ran
        before in this process (op-by-op mode caches each primitive process-wide)."""
        jax.clear_caches()

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
    def mode_facts(mode: str, counters_first) -> dict:
        """Nothing beyond the counters: jax.jit either compiles the whole function or fails."""
        return {}

    def versions(self) -> dict[str, str]:
        import jaxlib

        return {"jax": jax.__version__, "jaxlib": jaxlib.__version__}

    def device_info(self) -> list[dict[str, str]]:
        return [{"framework": "jax", "device": d.platform, "name": str(d),
                 "kind": getattr(d, "device_kind", "")} for d in jax.devices()]

    def reset_peak_memory(self, device: str) -> None:
        """Nothing to do: JAX has no API to reset its peak counter (see below)."""

    def peak_memory_bytes(self, device: str) -> int | None:
        """Peak device memory since ``reset_peak_memory``, where the device reports it (GPU);
        None on CPU. JAX's peak is process-wide and never resets, so a mode whose peak stays
        under an earlier one reads as the earlier peak: probe the hungrier mode last."""
        stats = self._memory_stats(device)
        if not stats or "peak_bytes_in_use" not in stats:
            return None
        return int(stats["peak_bytes_in_use"])

    def _memory_stats(self, device: str):
        devs = self._devices(device)
        return devs[0].memory_stats() if devs else None
