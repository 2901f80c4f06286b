"""The JIT axis: every (framework, mode) the harness knows, derived from the frameworks' own
declarations (``bench/frameworks/<name>_modes.py``). Nothing else in ``bench`` names a mode.

``worker_group`` names the process environment a mode needs. Modes sharing a group run in one
worker and are interleaved (today every mode of a framework shares one: TF auto-clustering is
switched on per call by its adapter, beside graph mode).
"""

from __future__ import annotations

from .frameworks import FRAMEWORKS, ModeSpec, framework_specs
from .frameworks.tf_modes import AUTOCLUSTER_FLAGS

DEVICES = ("cpu", "gpu")
Mode = ModeSpec  # the name the rest of bench uses

_SPECS = framework_specs()
_ALL: tuple[Mode, ...] = tuple(m for fw in FRAMEWORKS for m in _SPECS[fw].modes)

MODES: dict[tuple[str, str], Mode] = {(m.framework, m.name): m for m in _ALL}

__all__ = ["AUTOCLUSTER_FLAGS", "DEVICES", "FRAMEWORKS", "MODES", "Mode", "baselines_for",
           "counts_in_process", "modes_for", "nearest_baseline"]


def modes_for(framework: str) -> list[str]:
    return [m.name for m in _ALL if m.framework == framework]


def baselines_for(framework: str) -> list[str]:
    """The JIT-off modes a JIT-on mode is compared against, in declaration order."""
    return [m.name for m in _ALL if m.framework == framework and not m.jit]


def nearest_baseline(framework: str) -> str:
    """The JIT-off mode closest to this framework's JIT-on modes (TF: graph, JAX: eager)."""
    for m in _ALL:
        if m.framework == framework and m.jit and m.baseline:
            return m.baseline
    return next(m.name for m in _ALL if m.framework == framework and not m.jit)


def counts_in_process(framework: str) -> bool:
    """Whether the adapter's compile counters work in a process it does not own."""
    return _SPECS[framework].counts_in_process
