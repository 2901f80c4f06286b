"""The JIT axis: every (framework, mode) the harness knows, derived from the frameworks' own
declarations (``bench/frameworks/<name>_modes.py``). Nothing else in ``bench`` names a mode.

``worker_group`` names the process environment a mode needs. Modes sharing a group run in one
worker and are interleaved (today every mode of a framework shares one: TF auto-clustering is
switched on per call by its adapter, beside graph mode).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jitbench.frameworks import FRAMEWORKS, ModeSpec, framework_specs
from jitbench.frameworks.tf_modes import AUTOCLUSTER_FLAGS

DEVICES = ("cpu", "gpu")
Mode = ModeSpec  # the name the rest of bench uses

_SPECS = framework_specs()
SPECS = _SPECS  # what each framework declares beyond its modes (jitbench.frameworks.FrameworkSpec)
_ALL: tuple[Mode, ...] = tuple(m for fw in FRAMEWORKS for m in _SPECS[fw].modes)

MODES: dict[tuple[str, str], Mode] = {(m.framework, m.name): m for m in _ALL}

__all__ = ["AUTOCLUSTER_FLAGS", "DEVICES", "FRAMEWORKS", "MODES", "Mode", "SPECS", "baselines_for",
           "counts_in_process", "environment_problem", "modes_for", "nearest_baseline",
           "framework_worker_env", "verdict_pairs", "other_pairs"]


def modes_for(framework: str, stateful: bool = True) -> list[str]:
    """``framework``'s modes; ``stateful=False``: without those only a training step can run
    (``ModeSpec.stateful_only``, JAX ``donate``)."""
    return [m.name for m in _ALL if m.framework == framework
            and (stateful or not m.stateful_only)]


def baselines_for(framework: str) -> list[str]:
    """The JIT-off modes a JIT-on mode is compared against, in declaration order."""
    return [m.name for m in _ALL if m.framework == framework and not m.jit]


def nearest_baseline(framework: str) -> str:
    """The JIT-off mode closest to this framework's JIT-on modes (TF: graph, JAX: eager)."""
    for m in _ALL:
        if m.framework == framework and m.jit and m.baseline:
            return m.baseline
    return next(m.name for m in _ALL if m.framework == framework and not m.jit)


def verdict_pairs(framework: str, modes: Sequence[str]) -> list[tuple[str, str]]:
    """(JIT mode, nearest JIT-off mode) for the JIT modes of ``modes`` when that baseline is
    among them: the pairs whose verdicts decide when a group stops sampling."""
    base = nearest_baseline(framework)
    if base not in modes:
        return []
    return [(m, base) for m in modes if (framework, m) in MODES and MODES[(framework, m)].jit]


def other_pairs(framework: str, modes: Sequence[str]) -> list[tuple[str, str]]:
    """(JIT mode, JIT-off mode) for the JIT modes of ``modes`` against each JIT-off mode of
    ``modes`` other than the nearest (TF's xla against eager): judged from the same blocks when
    sampling ends, keeping nothing sampling."""
    base = nearest_baseline(framework)
    jit = [m for m in modes if (framework, m) in MODES and MODES[(framework, m)].jit]
    return [(m, b) for m in jit for b in baselines_for(framework) if b != base and b in modes]


def framework_worker_env(framework: str) -> dict[str, str]:
    """Variables every worker process of ``framework`` must have, whatever its parent set:
    apply after the parent's environment, before the worker group's own."""
    return dict(_SPECS[framework].worker_env)


def counts_in_process(framework: str) -> bool:
    """Whether the adapter's compile counters work in a process it does not own."""
    return _SPECS[framework].counts_in_process


def environment_problem(framework: str, mode: str, env: Mapping[str, str]) -> str | None:
    """Why ``mode`` cannot be measured as itself in a process started with ``env``, or None.

    A mode runs in a process only if that process has the environment its ``jitbench run``
    worker would have (``Mode.env``, set before the framework is imported; no mode declares one
    today). The pytest plugin and a user's own function (``jitbench.userfn.as_workload``) both ask
    here, and each adds what to do instead. What an adapter finds only once it is imported
    (TF auto-clustering's flag) is its ``mode_problem``."""
    spec = MODES[(framework, mode)]
    keys = {k for (fw, _), m in MODES.items() if fw == framework for k in m.env}
    for key in sorted(keys):
        have = env.get(key, "").split()
        want = spec.env.get(key, "").split()
        if want and not all(flag in have for flag in want):
            return (f"{framework} {mode} needs {key}='{spec.env[key]}' set before the "
                    f"framework is imported, and that would change the other {framework} "
                    f"modes of this process")
        others = {f for (fw, _), m in MODES.items() if fw == framework
                  for f in m.env.get(key, "").split()}
        if not want and others & set(have):
            return (f"this process has {key}='{env[key]}' (another mode's environment), so "
                    f"{framework} {mode} would not be measured as itself")
    return None
