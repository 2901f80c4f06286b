"""What a workload is, and how the registry turns workloads into frozen cases.

A workload is one file in ``suites/`` (or any importable module / ``.py`` file passed with
``--suite-file``) that defines a module-level ``WORKLOAD = Workload(...)``. Nothing in
``bench/`` needs to change to add one.

Expansion: workload × params × dtype × variant × framework × device × mode → ``Case``.
Cases that differ only in ``mode`` form a *group*: the timing protocol interleaves the modes
of one group sample by sample.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from jitbench.define.modes import DEVICES, FRAMEWORKS, MODES, modes_for
from jitbench.errors import UserError
from jitbench.frameworks import TrainStep

__all__ = ["Case", "Filters", "Sweep", "TrainStep", "Workload", "discover", "expand",
           "group_cases", "load_workload", "static_args"]

SIZE_SETS = ("quick", "full")


def static_args(stage: Callable, *argnums: int) -> Callable:
    """Mark arguments of ``stage`` as static: JAX jits it with ``static_argnums=argnums`` (one
    compilation per distinct value); TF's tf.function traces once per Python value anyway.
    Returns ``stage`` itself."""
    stage.static_argnums = tuple(argnums)
    return stage


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A recompile sweep: one function, built once per mode, called with ``points`` in turn
    (then each point again when ``revisit``), recording what compiled on each call.

    ``points``: parameter overrides of the workload's first quick size, e.g.
    ``[{"seq": 10}, {"seq": 20}]``; a point's ``"dtype"`` changes the input dtype. ``static``:
    parameters passed as trailing Python arguments after the inputs (static: a new value means
    a new program), in this order. ``variant``: the variant built (default: the first).
    ``builders``: framework -> builder used instead of the workload's (e.g. one taking the
    static arguments). Run with ``jitbench sweep``.
    """

    name: str
    points: Sequence[Mapping[str, Any]]
    static: Sequence[str] = ()
    variant: str | None = None
    builders: Mapping[str, Callable] = dataclasses.field(default_factory=dict)
    revisit: bool = True
    description: str = ""


@dataclasses.dataclass(frozen=True)
class Workload:
    """The contract a suite file fulfils.

    ``inputs(params, dtype, rng)``  -> tuple of numpy arrays (fixed seed given by the harness)
    ``reference(inputs64, params, variant)`` -> numpy array, computed in float64
    ``tf(params, dtype, variant)`` / ``jax(...)`` (or ``builders={"<framework>": fn}`` for a
    framework without a field of its own) -> list of *stages*: callables applied in
    sequence, ``out = stage_k(*prev)``. The adapter applies the mode (tf.function, jax.jit…) to
    each stage separately, so a two-stage list is "jit each op apart", one stage is "fused".
    ``flops(params, variant)`` -> approximate floating point operations of one call.
    ``tolerance[dtype]`` -> (rtol, atol) against the float64 reference, element-wise, at the
    dtype's own precision. Where float32 products run at a reduced precision (TF32 on a GPU)
    the output may instead lie within a normwise bound of that precision, which grows with
    ``reduction(params, variant)`` -> the number of terms of the longest sum in its matrix
    products (the K of an M x K @ K x N; ``jitbench.protocol.correctness``; 1 when not given).
    ``expected_failures`` maps (framework, mode) or (framework, mode, variant) to a reason:
    the harness still runs the case but marks the failure as expected.
    ``sweeps``: recompile sweeps (:class:`Sweep`), run by ``jitbench sweep`` only.
    ``default_variants[size]``: the variants of that size set that a run measures when it
    names neither this suite (``--suite``) nor a variant (``--variant``), to keep the default
    grid short; naming the suite measures them all. A size set not listed: all variants.
    ``in_default_run``: False keeps the workload out of a run that names no suite (``make
    bench``, ``jitbench run`` without ``--suite``); ``--suite NAME`` and pytest measure it.
    ``stateful``: its builders return one :class:`TrainStep` (state updated every call); the
    modes declared ``stateful_only`` (JAX ``donate``) run for it, and its reference returns
    ``(output, shown state)`` after the TrainStep's ``check_steps`` steps.
    """

    name: str
    grid: Mapping[str, Sequence[Mapping[str, Any]]]
    dtypes: Sequence[str]
    inputs: Callable
    reference: Callable
    flops: Callable
    tolerance: Mapping[str, tuple[float, float]]
    tf: Callable | None = None
    jax: Callable | None = None
    variants: Sequence[str] = ("default",)
    size_label: Callable[[Mapping[str, Any]], str] | None = None
    description: str = ""
    expected_failures: Mapping[tuple, str] = dataclasses.field(default_factory=dict)
    builders: Mapping[str, Callable] = dataclasses.field(default_factory=dict)
    sweeps: Sequence[Sweep] = ()
    stateful: bool = False
    default_variants: Mapping[str, Sequence[str]] = dataclasses.field(default_factory=dict)
    reduction: Callable[[Mapping[str, Any], str], int] | None = None
    in_default_run: bool = True

    def reduction_length(self, params: Mapping[str, Any], variant: str) -> int:
        """``reduction(params, variant)``, or 1 where the workload declares none."""
        return int(self.reduction(params, variant)) if self.reduction is not None else 1

    def __post_init__(self):
        for size, chosen in self.default_variants.items():
            bad = [v for v in chosen if v not in self.variants]
            if bad or not chosen:
                raise UserError(f"workload {self.name!r}: default_variants[{size!r}] = "
                                f"{list(chosen)!r}; valid: a non-empty list of "
                                f"{', '.join(self.variants)}")

    def modes(self, framework: str) -> list[str]:
        """The modes this workload runs in ``framework``."""
        return modes_for(framework, stateful=self.stateful)

    def label(self, params: Mapping[str, Any]) -> str:
        if self.size_label is not None:
            return self.size_label(params)
        return "-".join(f"{k}{v}" for k, v in params.items())

    def builder(self, framework: str) -> Callable | None:
        if framework in self.builders:
            return self.builders[framework]
        return getattr(self, framework, None) if framework in FRAMEWORKS else None


@dataclasses.dataclass(frozen=True, order=True)
class Case:
    """One measured thing: hashable, serialisable, and rebuildable in a worker process."""

    workload: str
    variant: str
    size: str
    params_json: str  # sorted JSON, so the Case stays hashable
    dtype: str
    framework: str
    device: str
    mode: str
    size_set: str = "quick"
    source: str = ""  # module name or file path the workload came from

    @property
    def params(self) -> dict[str, Any]:
        return json.loads(self.params_json)

    @property
    def jit(self) -> bool:
        return MODES[(self.framework, self.mode)].jit

    @property
    def group_key(self) -> tuple:
        """Everything but the mode and the worker group: the modes interleaved together."""
        return (self.workload, self.variant, self.params_json, self.dtype, self.framework,
                self.device, self.source, MODES[(self.framework, self.mode)].worker_group)

    @property
    def case_id(self) -> str:
        return (f"{self.workload}-{self.variant}-{self.framework}-{self.mode}-{self.device}-"
                f"{self.dtype}-{self.size}")

    @property
    def seed(self) -> int:
        """Fixed per (workload, params, dtype): every mode and framework sees the same data."""
        key = f"{self.workload}|{self.params_json}|{self.dtype}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:4], "little")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Case":
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Case":
        """The case a result row was measured for (to re-measure or resume it)."""
        return cls(row["workload"], row["variant"], row["size"],
                   json.dumps(row["params"], sort_keys=True), row["dtype"], row["framework"],
                   row["device"], row["mode"], row.get("size_set", "quick"),
                   row.get("source", ""))


# --------------------------------------------------------------------------- discovery

# {source: path}: a worker loads these workloads from the given files instead (JSON). A night
# whose workload changed measures the last good night's copy of its file beside tonight's
# (``jitbench.nightly.change``); the cases keep their own source, so the two arms pair up.
FILES_VAR = "JITBENCH_WORKLOAD_FILES"


OWN_SUITES = "jitbench.suites"  # the repository's suites/ folder, as installed


def _load_source(source: str):
    """Import a workload module by dotted name or by ``.py`` file path (or from the file
    :data:`FILES_VAR` names for it)."""
    instead = _files_instead().get(source)
    if instead:
        source = instead
    if source.endswith(".py"):
        path = Path(source)
        if not path.is_file():
            raise UserError(f"suite file {source!r} does not exist")
        name = "jitbench_suite_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    if source.startswith(_OLD_SUITES):  # e.g. "suites.mmd" -> "jitbench.suites.mmd"
        source = "jitbench." + source
    return importlib.import_module(source)


def _files_instead() -> dict[str, str]:
    text = os.environ.get(FILES_VAR)
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        raise UserError(f"{FILES_VAR}={text!r} is not JSON ({{source: file.py}})") from None
    if not isinstance(found, dict):
        raise UserError(f"{FILES_VAR}={text!r} is not a JSON object ({{source: file.py}})")
    return {str(k): str(v) for k, v in found.items()}


def source_file(source: str) -> Path | None:
    """The file a workload source (dotted module name or ``.py`` path) is defined in; None
    where it cannot be found."""
    if source.endswith(".py"):
        return Path(source)
    try:
        found = importlib.util.find_spec(
            "jitbench." + source if source.startswith(_OLD_SUITES) else source)
    except (ImportError, ValueError):
        found = None
    return Path(found.origin) if found is not None and found.origin else None


def source_fingerprints(cases: Sequence["Case"]) -> dict[str, str]:
    """{workload name: a fingerprint of the file it is defined in} for the cases' workloads
    (sha256 of the file, 16 hex digits; None where it cannot be read): the nightly names a
    changed workload beside a step (``jitbench.nightly.night``)."""
    out: dict[str, str] = {}
    for name, source in sorted({(c.workload, c.source) for c in cases if c.source}):
        path = source_file(source)
        try:
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path else None
        except OSError:
            out[name] = None
    return out


def load_workload(source: str) -> Workload:
    module = _load_source(source)
    wl = getattr(module, "WORKLOAD", None)
    if not isinstance(wl, Workload):
        raise UserError(f"{source!r} defines no WORKLOAD = jitbench.Workload(...)")
    return wl


SUITES_GROUP = "jitbench.suites"  # the entry-point group that registers workload modules
_OLD_SUITES = "suites."  # recorded runs name the shipped workloads by their old package


def registered_sources() -> list[str]:
    """The workload modules, sorted: every module of jitbench's own ``suites/`` folder (the
    installed ``jitbench.suites``: a file added there is a workload, no registration needed),
    and those any other installed package registers in the :data:`SUITES_GROUP` entry-point
    group. Only names are listed here: no workload is imported."""
    import importlib.util
    import pkgutil
    from importlib.metadata import entry_points

    found = {ep.value for ep in entry_points(group=SUITES_GROUP)}
    try:
        own = importlib.util.find_spec(OWN_SUITES)
    except ImportError:
        own = None
    if own is not None and own.submodule_search_locations:
        found |= {f"{OWN_SUITES}.{m.name}" for m in
                  pkgutil.iter_modules(own.submodule_search_locations)
                  if not m.name.startswith(("_", "test_", "conftest"))}
    return sorted(found)


def discover(extra_files: Sequence[str] = ()) -> dict[str, tuple[str, Workload]]:
    """All workloads: the registered modules (:func:`registered_sources`) plus
    ``extra_files``.

    Returns ``{name: (source, workload)}``.
    """
    found: dict[str, tuple[str, Workload]] = {}
    sources = registered_sources()
    if not sources:
        raise UserError(f"no workload is registered (entry-point group {SUITES_GROUP!r}): "
                        f"jitbench is not installed in this environment; install it "
                        f"(pip install -e . in its repository) rather than running from a "
                        f"source tree")
    sources += [str(Path(f).resolve()) for f in extra_files]
    for source in sources:
        module = _load_source(source)
        wl = getattr(module, "WORKLOAD", None)
        if isinstance(wl, Workload):
            found[wl.name] = (source, wl)
        elif source in extra_files or source.endswith(".py"):
            raise UserError(f"suite file {source!r} defines no WORKLOAD = jitbench.Workload(...)")
    return found


# --------------------------------------------------------------------------- filters

@dataclasses.dataclass(frozen=True)
class Filters:
    """Comma-list filters as typed on the command line; ``None`` means "all"."""

    suite: tuple[str, ...] | None = None
    framework: tuple[str, ...] | None = None
    mode: tuple[str, ...] | None = None
    device: tuple[str, ...] | None = None
    dtype: tuple[str, ...] | None = None
    variant: tuple[str, ...] | None = None
    size: str = "quick"
    suite_files: tuple[str, ...] = ()
    # ignore ``Workload.default_variants`` and ``in_default_run`` (pytest collects all)
    every_variant: bool = False

    def measures(self, name: str, wl: "Workload") -> bool:
        """Whether these filters measure workload ``name`` at all."""
        if self.suite:
            return name in self.suite
        return wl.in_default_run or self.every_variant

    def variants(self, name: str, wl: "Workload") -> Sequence[str]:
        """The variants of workload ``name`` these filters measure, before ``--variant``."""
        if (self.every_variant or self.variant or (self.suite and name in self.suite)
                or self.size not in wl.default_variants):
            return wl.variants
        return wl.default_variants[self.size]

    @staticmethod
    def split(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = value.split(",")
        items = tuple(v.strip() for v in value if v.strip())
        return items or None


def _check(kind: str, given: tuple[str, ...] | None, valid: Sequence[str]) -> None:
    if given is None:
        return
    bad = [g for g in given if g not in valid]
    if bad:
        raise UserError(f"unknown {kind} {', '.join(map(repr, bad))}; "
                        f"valid: {', '.join(sorted(set(valid)))}")


def expand(filters: Filters = Filters()) -> list[Case]:
    """Every case a run with these filters executes, in a stable order."""
    if filters.size not in SIZE_SETS:
        raise UserError(f"unknown size {filters.size!r}; valid: {', '.join(SIZE_SETS)}")
    workloads = discover(filters.suite_files)
    _check("suite", filters.suite, list(workloads))
    _check("framework", filters.framework, FRAMEWORKS)
    _check("mode", filters.mode, sorted({m for (_, m) in MODES}))
    _check("device", filters.device, DEVICES)
    all_dtypes = sorted({d for _, wl in workloads.values() for d in wl.dtypes})
    _check("dtype", filters.dtype, all_dtypes)
    all_variants = sorted({v for _, wl in workloads.values() for v in wl.variants})
    _check("variant", filters.variant, all_variants)

    cases: list[Case] = []
    for name, (source, wl) in sorted(workloads.items()):
        if not filters.measures(name, wl):
            continue
        for params in wl.grid.get(filters.size, ()):
            params_json = json.dumps(dict(params), sort_keys=True)
            for dtype in wl.dtypes:
                if filters.dtype and dtype not in filters.dtype:
                    continue
                for variant in filters.variants(name, wl):
                    if filters.variant and variant not in filters.variant:
                        continue
                    for framework in FRAMEWORKS:
                        if wl.builder(framework) is None:
                            continue
                        if filters.framework and framework not in filters.framework:
                            continue
                        for device in filters.device or DEVICES:
                            for mode in wl.modes(framework):
                                if filters.mode and mode not in filters.mode:
                                    continue
                                cases.append(Case(name, variant, wl.label(params), params_json,
                                                  dtype, framework, device, mode,
                                                  filters.size, source))
    return cases


def variants_left_out(filters: Filters = Filters()) -> dict[str, tuple[int, int]]:
    """Workloads whose ``default_variants`` these filters apply: ``{name: (measured, all)}``."""
    out = {}
    for name, (_, wl) in sorted(discover(filters.suite_files).items()):
        if not filters.measures(name, wl):
            continue
        kept = filters.variants(name, wl)
        if wl.grid.get(filters.size) and len(kept) < len(wl.variants):
            out[name] = (len(kept), len(wl.variants))
    return out


def group_cases(cases: Sequence[Case]) -> list[list[Case]]:
    """Cases sharing a group key, in first-seen order: the unit a worker interleaves."""
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.group_key, []).append(case)
    return list(groups.values())
