"""The JIT axis: every (framework, mode) the harness knows, as plain data.

``worker_group`` names the process environment a mode needs. Modes sharing a group run in one
worker and are interleaved sample by sample; TF auto-clustering needs ``TF_XLA_FLAGS`` set before
TensorFlow is imported, so it gets a worker of its own.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

FRAMEWORKS = ("tf", "jax")
DEVICES = ("cpu", "gpu")

AUTOCLUSTER_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"


@dataclasses.dataclass(frozen=True)
class Mode:
    framework: str
    name: str
    jit: bool
    how: str
    worker_group: str = "default"
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


_ALL = (
    Mode("tf", "eager", False, "plain Python call on eager tensors"),
    Mode("tf", "graph", False, "tf.function(fn)"),
    Mode("tf", "xla", True, "tf.function(fn, jit_compile=True)"),
    Mode("tf", "autoclustering", True, f"tf.function(fn) with TF_XLA_FLAGS='{AUTOCLUSTER_FLAGS}'",
         worker_group="autoclustering", env={"TF_XLA_FLAGS": AUTOCLUSTER_FLAGS}),
    Mode("jax", "eager", False, "op-by-op dispatch, no jax.jit"),
    Mode("jax", "jit", True, "jax.jit(fn) of the whole function"),
)

MODES: dict[tuple[str, str], Mode] = {(m.framework, m.name): m for m in _ALL}


def modes_for(framework: str) -> list[str]:
    return [m.name for m in _ALL if m.framework == framework]


def baselines_for(framework: str) -> list[str]:
    """The JIT-off modes a JIT-on mode is compared against."""
    return [m.name for m in _ALL if m.framework == framework and not m.jit]
