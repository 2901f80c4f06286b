"""A user's own function measured like a workload: the part shared by ``jitbench.measure`` (the
Python API, ``jitbench.userfn.measure``), the ``jit_benchmark`` pytest fixture
(``jitbench.pytest_plugin.fixture``) and
``jitbench.userfn.isolate``'s workers.

``prepare`` checks what the user passed (framework from the inputs, modes, tolerances) and
raises one ``UserError`` naming the problem; ``run`` times the modes with
``jitbench.protocol.timing.measure``
(first call apart, warm-up until compiles stop, synced samples, modes interleaved) on a
``jitbench.protocol.case_setup.Casework`` (inputs placed once, modes built, every JIT-on output
checked against
the JIT-off one and against ``reference`` when given) and writes the rows with
``jitbench.results.row``,
like a ``jitbench run`` worker's, so ``jitbench.results.files.to_frame`` and ``jitbench.analysis``
read
them.

The framework is told from the inputs' type names: nothing here imports TensorFlow or JAX;
``get_adapter`` imports the one the inputs already belong to (or the one named).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitbench.define.modes import (
    FRAMEWORKS,
    MODES,
    SPECS,
    baselines_for,
    counts_in_process,
    environment_problem,
    modes_for,
    other_pairs,
    verdict_pairs,
)
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.frameworks import Stepping, TrainStep, nnx_object
from jitbench.protocol import trees
from jitbench.protocol.case_setup import Casework, Checked, matmul_precision, mismatch_text
from jitbench.protocol.correctness import compare
from jitbench.protocol.timing import Protocol, measure
from jitbench.results import row as rows
from jitbench.userfn.arguments import call_with, with_keywords
from jitbench.userfn.keras_model import (first_batch, fit_epochs, is_keras_model,
                                         training_step)

NAMES = {fw: SPECS[fw].title for fw in FRAMEWORKS}
# Top-level module of an input's type -> framework (type names only: no import needed)
_TYPE_MODULES = {mod: fw for fw in FRAMEWORKS for mod in SPECS[fw].type_modules}
_ANY = " or ".join(f"framework={fw!r}" for fw in FRAMEWORKS)
# Default relative tolerance of a JIT-on output against the JIT-off one, by dtype. The absolute
# tolerance defaults to rtol × max|JIT-off output|: XLA may sum in another order, and elements
# that cancel to ~0 must not fail an element-wise test.
RTOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-3, "float64": 1e-7}
DEFAULT_RTOL = 1e-3
VARIANT = "own"  # the rows' variant: a user's own function, not a registered workload

_ADAPTERS: dict[str, Any] = {}


def use_adapter(framework: str, adapter) -> None:
    """Make ``adapter`` this process's adapter for ``framework`` (a worker's, made with its
    log before anything else: ``jitbench.userfn.isolate``)."""
    _ADAPTERS[framework] = adapter


def adapter_for(framework: str, log_path: str | None = None):
    """This process's adapter for ``framework``, made on first use (one per process: each
    JAX adapter registers a compile listener; ``log_path`` counts on that first call only). It
    leaves JAX's float64 switch as the user's session has it."""
    if framework not in _ADAPTERS:
        from jitbench.frameworks import get_adapter

        if not counts_in_process(framework) and log_path is None:
            # nothing here reads TF's log: keep its INFO lines out of the user's terminal,
            # notebook or captured test output
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        _ADAPTERS[framework] = get_adapter(framework, log_path=log_path, own_process=False)
    return _ADAPTERS[framework]


@dataclasses.dataclass
class Spec:
    """What to measure, checked: the function, its inputs and the modes to run."""

    fn: Callable
    args: tuple
    framework: str
    modes: list[str]  # to run, JIT-off ones first
    skipped: dict[str, str]  # mode -> why it cannot run in this process
    device: str | None = None  # None: chosen where it runs (gpu where the framework sees one)
    reference: Any = None  # numpy output to check against, or None
    rtol: float | None = None
    atol: float | None = None
    flops: float | None = None
    name: str = ""
    source: str = ""
    unwrapped: str | None = None  # the decorator taken off (``unwrap``), or None
    static: tuple[int, ...] = ()  # positional arguments passed as static (the rows say which)
    keywords: tuple[str, ...] = ()  # the last len(keywords) of args go by these names
    about: dict[str, Any] = dataclasses.field(default_factory=dict)  # e.g. a Keras model's
    per_mode: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # fit's

    def fields(self) -> dict[str, Any]:
        """What the rows say about how the function was taken (empty for a plain one)."""
        out: dict[str, Any] = dict(self.about)
        if self.unwrapped:
            out["unwrapped"] = self.unwrapped
        if self.static:
            out["static_argnums"] = list(self.static)
        return out


def unwrap(fn) -> tuple[Callable, str | None, tuple[int, ...] | None, tuple[int, ...]]:
    """(the function to measure, the decorator it came in or None, the static positions that
    decorator declared or None, the positions it donates). An already-jitted function is
    measured from its undecorated form, so its JIT-off modes run without JIT: ``jax.jit(f)``
    -> ``f`` (``__wrapped__``, with its ``static_argnums`` and ``donate_argnums``),
    ``tf.function(f, ...)`` -> ``f`` (``python_function``).

    >>> unwrap(len)
    (<built-in function len>, None, None, ())
    """
    top = type(fn).__module__.split(".")[0]
    inner = getattr(fn, "__wrapped__", None)
    if type(fn).__module__.startswith("flax.nnx") and callable(inner):
        return inner, "nnx.jit", None, ()
    if top in ("jax", "jaxlib") and callable(inner) and hasattr(fn, "lower"):
        info = getattr(fn, "_jit_info", None)  # jax's record of the jit's arguments
        static = getattr(info, "static_argnums", None)
        donated = tuple(getattr(info, "donate_argnums", None) or ())
        return inner, "jax.jit", tuple(static) if static is not None else None, donated
    inner = getattr(fn, "python_function", None)
    if top == "tensorflow" and callable(inner):
        jit = getattr(fn, "_jit_compile", None)
        return (inner, f"tf.function(jit_compile={jit})" if jit is not None else "tf.function",
                (), ())
    return fn, None, None, ()


def _declared_donation(fn, args: tuple, donated: tuple[int, ...], static, fw, adapter,
                       unwrapped: str | None) -> tuple[Callable, tuple, int | None, str]:
    """``jitbench.measure(jax.jit(step, donate_argnums=K), ...)``: the jit's donation measured
    as ``donate=K`` is (:func:`_donating`) where K is one argument the step returns anew;
    otherwise left out, and the summary says why (a donated input cannot be passed again, so
    a step that does not return it cannot be called in a loop). (the function, its arguments,
    the argument donated or None, what the summary calls the decorator)."""
    said = f"{unwrapped}(donate_argnums={donated[0] if len(donated) == 1 else donated})"
    if len(donated) > 1:
        return fn, args, None, (f"{said}; its donation left out: jitbench donates one "
                                f"argument (pass donate=K)")
    try:
        return (*_donating(fn, args, donated[0], static, fw, adapter), donated[0], said)
    except UserError as exc:
        return fn, args, None, f"{said}; its donation left out: {str(exc).partition(': ')[2]}"


def _donating(fn: Callable, args: tuple, position: Any, static: tuple[int, ...], fw: str,
              adapter) -> tuple[TrainStep, tuple]:
    """``jitbench.measure(step, ..., donate=K)``: argument K is state the step returns anew
    (a ``TrainState``, a params pytree), so XLA may reuse its buffers for the new value
    (``jax.jit(step, donate_argnums=K)``). A donated buffer cannot be passed again, so the step
    is measured as a training loop calls it: a :class:`TrainStep` carrying the new value from
    call to call in every mode (``eager``, ``jit``, ``aot`` and ``donate``), its answer the
    output and the state after one step from the argument as given (a copy: the user's arrays
    are never donated). (the TrainStep, the other arguments)."""
    if fw != "jax":
        raise UserError(f"donate={position!r}: donation is JAX's (jax.jit's donate_argnums); "
                        f"this function's inputs are {NAMES[fw]}")
    if isinstance(position, bool) or not isinstance(position, int) or not (
            0 <= position < len(args)):
        raise UserError(f"donate={position!r}: give the position of the argument to donate, "
                        f"an int from 0 to {len(args) - 1}")
    if position in static or not any(True for _ in trees.leaves([args[position]])):
        raise UserError(f"donate={position}: argument {position} holds no array to donate")
    if adapter is None:
        raise UserError(f"donate={position}: measured in this process only (leave out "
                        f"isolate=True)")
    index = adapter.returned_again(_static_stage(fn, static), args, position)
    if index is None:
        raise UserError(f"donate={position}: the function must return argument {position}'s "
                        f"new value (same structure, shapes and dtypes) as one element of a "
                        f"tuple, as a training step returns its new state")
    rest = args[:position] + args[position + 1:]
    init = adapter.to_numpy(args[position])

    def step(state, *others):
        out = fn(*others[:position], state, *others[position:])
        kept = tuple(o for i, o in enumerate(out) if i != index)
        return (kept[0] if len(kept) == 1 else kept), out[index]

    step.__name__ = getattr(fn, "__name__", "step")
    moved = tuple(i - (i > position) for i in static)  # positions among the other arguments
    if moved:
        step.static_argnums = tuple(i + 1 for i in moved)  # type: ignore[attr-defined]
    return TrainStep(lambda: (step, init), check_steps=1), rest


def _static_stage(fn: Callable, static: tuple[int, ...]) -> Callable:
    """``fn`` with ``static_argnums`` set for the adapters (a wrapper: the user's function is
    left as it came)."""
    if not static:
        return fn

    def stage(*xs):
        return fn(*xs)

    stage.__name__ = getattr(fn, "__name__", "fn")
    stage.static_argnums = static  # type: ignore[attr-defined]
    return stage


def infer_framework(args: Sequence, framework: str | None = None) -> str:
    """The framework of the inputs (``framework`` when given, checked against them).

    >>> infer_framework([np.ones(3)], "jax")
    'jax'
    """
    if framework is not None and framework not in FRAMEWORKS:
        raise UserError(f"unknown framework {framework!r}; valid: {', '.join(FRAMEWORKS)}")
    seen: dict[str, tuple[str, str]] = {}
    for path, x in trees.leaves(list(args)):  # each argument may be a pytree of arrays
        fw = _TYPE_MODULES.get(type(x).__module__.split(".")[0])
        if fw is not None and fw not in seen:
            seen[fw] = (_argument(path), type(x).__name__)
    if len(seen) > 1:
        parts = [f"{where} is a {NAMES[fw]} {t}" for fw, (where, t) in sorted(seen.items())]
        raise UserError(f"inputs of mixed frameworks: {' and '.join(parts)}; pass the inputs "
                        f"of one framework (or numpy arrays and {_ANY})")
    if framework is not None:
        if seen and framework not in seen:
            (fw, (where, t)), = seen.items()
            raise UserError(f"framework={framework!r}, but {where} is a {NAMES[fw]} {t}")
        return framework
    if not seen:
        raise UserError(f"cannot tell the framework from the inputs (no "
                        f"{' or '.join(NAMES.values())} array among them); pass {_ANY}")
    return next(iter(seen))


def _argument(path: str) -> str:
    """``"[0][1]['w']"`` (a leaf's path in the argument list) -> ``"argument 0 at [1]['w']"``."""
    head, _, rest = path[1:].partition("]")
    return f"argument {head} at {rest}" if rest else f"argument {head}"


def resolve_modes(framework: str, modes: Sequence[str] | None,
                  problem: Callable[[str], str | None], donating: bool = False
                  ) -> tuple[list, dict]:
    """(modes to run, {mode: why skipped}); ``problem(mode)``: why this process cannot run it.
    ``None``: every mode this process can run. ``donating``: the function's state is carried
    from call to call (``donate=``), so the modes that donate it run too."""
    valid = modes_for(framework, stateful=donating)  # a plain function has nothing to donate
    if modes is None:
        wanted = valid
    else:
        if isinstance(modes, str):
            modes = [modes]
        bad = [m for m in modes if m not in valid]
        if bad:
            raise UserError(f"unknown mode {bad[0]!r} for {framework}; valid: "
                            f"{', '.join(valid)}")
        if not modes:
            raise UserError(f"modes is empty; valid: {', '.join(valid)}")
        wanted = list(dict.fromkeys(modes))
    why = {m: problem(m) for m in wanted}
    if modes is None:  # by default, only what this process can measure
        return [m for m in wanted if not why[m]], {}
    order = {m: i for i, m in enumerate(valid)}
    run_ = sorted((m for m in wanted if not why[m]),
                  key=lambda m: (MODES[(framework, m)].jit, order[m]))
    return run_, {m: w for m, w in why.items() if w}


def prepare(fn, args, *, framework=None, modes=None, reference=None, rtol=None, atol=None,
            flops=None, device=None, name=None, env=None, here: bool = True,
            donate: int | None = None, batch_size: int | None = None, kwargs=None) -> Spec:
    """Check the user's arguments; one ``UserError`` naming the problem. ``here``: it runs in
    this process, so its adapter is made (the framework the inputs belong to), the device
    chosen, and the modes this process cannot run (``env``: its environment as it started;
    ``os.environ`` by default) skipped; ``here=False`` (``jitbench.userfn.isolate``'s caller) checks
    only the arguments. ``kwargs``: the function's keyword arguments, checked by
    ``jitbench.userfn.arguments.keyword_arguments``, passed after ``args`` (``with_keywords``)."""
    if not callable(fn):
        raise UserError(f"the function to measure is not callable: {fn!r}")
    args = tuple(args)
    about: dict[str, Any] = {}
    model, dataset = None, args
    if batch_size is not None and not is_keras_model(fn):
        raise UserError(f"batch_size={batch_size!r} goes with a Keras model (x, y a dataset as "
                        f"fit gets it); for a function, pass one batch")
    if is_keras_model(fn):  # its training step, as fit runs it
        model = fn
        if batch_size is not None:  # x, y a dataset: the step measured on its first batch
            args = first_batch(args, batch_size)
        fn, args, about, own, asked = training_step(
            model, args, gpu_visible=lambda: adapter_for("tf").device_available("gpu")[0])
        framework = framework or own
        name = name or fn.__name__
        modes = modes if modes is not None else list(asked)
    fn, unwrapped, declared, donated = unwrap(jitted := fn)
    positional = len(args)  # the user's; their keywords follow them from here on
    fn, args, static, donated, keywords = with_keywords(fn, args, kwargs or {}, declared,
                                                        jitted, donated, donate)
    if any(map(nnx_object, args)):  # changed in place: op by op or under nnx.jit only
        from jitbench.frameworks.jax_modes import NNX_MODES

        framework, static = framework or "jax", ()
        if modes is not None and set([modes] if isinstance(modes, str) else modes) - set(
                NNX_MODES):
            raise UserError(f"modes={modes!r}: a step that changes flax NNX objects in place "
                            f"runs in {', '.join(NNX_MODES)} only (nnx.jit); for the other "
                            f"modes write it in NNX's functional form (nnx.split, nnx.merge)")
        modes = modes if modes is not None else list(NNX_MODES)
    fw = infer_framework(args, framework)
    if device is not None and device not in ("cpu", "gpu"):
        raise UserError(f"unknown device {device!r}; valid: cpu, gpu")
    for label, v in (("rtol", rtol), ("atol", atol), ("flops", flops)):
        if v is not None and not (isinstance(v, (int, float)) and v >= 0):
            raise UserError(f"{label} must be a number ≥ 0, not {v!r}")
    adapter = adapter_for(fw) if here else None
    if adapter is not None:
        device = choose_device(device, adapter)
    env = os.environ if env is None else env

    def problem(mode: str) -> str | None:
        if adapter is None:
            return None
        return environment_problem(fw, mode, env) or adapter.mode_problem(mode, device)

    if donate is not None:
        fn, args = _donating(fn, args, donate, static, fw, adapter)
    elif donated and here:  # the jit's own donation, where it can be kept
        fn, args, donate, unwrapped = _declared_donation(fn, args, donated, static, fw,
                                                         adapter, unwrapped)
    run_, skipped = resolve_modes(fw, modes, problem, donating=donate is not None)
    # a Keras model: fit timed per epoch in each mode (x, y one batch, or with batch_size
    # the dataset), beside the step alone that the rows time
    per_mode = fit_epochs(model, dataset, batch_size, run_) if model is not None and here else {}
    if reference is not None and callable(reference):
        import numpy as np

        try:
            reference = call_with(reference, trees.map_arrays(
                lambda a: np.asarray(a, dtype=np.float64), list(args)), keywords)
        except Exception as exc:
            raise UserError(f"reference raised {type(exc).__name__}: {exc}") from exc
    name = name or getattr(fn, "__name__", None) or type(fn).__name__
    source = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', name)}"
    return Spec(fn=fn if donate is not None else _static_stage(fn, static), args=args,
                framework=fw, modes=run_,
                skipped=skipped, device=device, reference=reference, rtol=rtol, atol=atol,
                flops=flops, name=name, source=source, unwrapped=unwrapped,
                static=tuple(i for i in static if i < positional), keywords=keywords,
                about=about, per_mode=per_mode)


def choose_device(device: str | None, adapter) -> str:
    if device is not None:
        ok, why = adapter.device_available(device)
        if not ok:
            raise UserError(f"device={device!r}: {why}")
        return device
    return "gpu" if adapter.device_available("gpu")[0] else "cpu"


def case_of(spec: Spec, mode: str, device: str | None = None) -> Case:
    """The :class:`~jitbench.define.workload.Case` a row of ``spec`` is about: the function's name
    as
    the workload, its input shapes as the size and (with their element count: the report
    orders sizes by a number when ``flops`` is not given) as the params, the first array's
    dtype."""
    arrays = [a for _, a in trees.arrays(list(spec.args))]
    shapes = [[int(d) for d in a.shape] for a in arrays]
    size = ",".join("x".join(map(str, s)) or "scalar" for s in shapes) or "no-arrays"
    dtype = getattr(arrays[0].dtype, "name", str(arrays[0].dtype)) if arrays else "none"
    params = {"shapes": shapes, "elements": sum(math.prod(s) for s in shapes)}
    # size_set None: no size set of the registry chose this size
    return Case(spec.name, VARIANT, size, json.dumps(params, sort_keys=True), dtype,
                spec.framework, device or spec.device or "cpu", mode, size_set=None,
                source=spec.source)


def run(spec: Spec, protocol: Protocol | None = None,
        counts: bool | None = None) -> list[dict[str, Any]]:
    """Measure a ``prepare``-d ``spec`` in this process; one row per requested mode (skipped
    ones included). ``counts``: keep the adapter's compile counters (default: where they work
    in a process the adapter does not own, ``jitbench.define.modes.counts_in_process``).

    A function with state (TF variables it assigns: a Keras model's weights and optimizer) is
    timed as a training loop calls it, step after step; its state is saved before the first
    call (:class:`~jitbench.frameworks.TrainStep`), each mode's answer checked is its output
    and state after one step from those saved values, and the state is put back as it was at
    the end. A function whose JIT-off mode answers differently from the same start (state
    that cannot be saved: a Python object it changes, unseeded random numbers) is not
    checked; its rows say why (``check_skipped``).

    Raises ``UserError`` when the function fails with JIT off: then the function itself is
    broken. A failure with JIT on only is a result (a row with its status and error).
    """
    adapter = adapter_for(spec.framework)
    protocol = (protocol or Protocol()).for_device(spec.device or "cpu")
    counts = counts_in_process(spec.framework) if counts is None else counts
    started = time.time()

    def row(mode: str, **fields) -> dict[str, Any]:
        return rows.new_row(case_of(spec, mode), worker_pid=os.getpid(), started_at=started,
                            finished_at=time.time(), **fields)

    out = [row(m, status="skipped", error=why) for m, why in spec.skipped.items()]
    if not spec.modes:
        return out
    adapter.reset()  # the first call pays its compilation, whatever this process ran before
    precision = matmul_precision(adapter, spec.device, case_of(spec, spec.modes[0]).dtype)
    work = Casework(adapter, spec.framework, spec.device, spec.args, spec.reference,
                    arrays_only=True, reference_label="the reference", precision=precision)
    state = State.find(adapter, spec, work)
    dtype = case_of(spec, spec.modes[0]).dtype
    built = {m: work.build(state.stages, m) for m in spec.modes}
    results = measure([work.timed(m, built[m]) for m in spec.modes], protocol,
                      counters=adapter.counters,
                      notes=getattr(adapter, "compile_notes", None),
                      pairs=verdict_pairs(spec.framework, spec.modes),
                      others=other_pairs(spec.framework, spec.modes))
    try:
        answers = {m: work.answer(built[m], r.output) for m, r in results.items() if r.ok}
        state.put_back(built)  # a JIT-off mode built now starts from the saved state too
        nojit, nojit_mode = _nojit(spec, work, results, answers, state)
        out_part, state_part = state.split(nojit)
        work.rtol, work.atol = _tolerance(out_part, dtype, spec.rtol, spec.atol)
        skip = state.unrepeatable(work, built.get(nojit_mode), nojit)
    finally:
        state.put_back(built)
    state_atol = _tolerance(state_part, dtype, spec.rtol, spec.atol)[1]
    flops = float(spec.flops) if spec.flops is not None else None

    def check(mode: str, r):
        if skip:
            return Checked(dict(check_skipped=skip, **state.fields), None, None), None
        jit = MODES[(spec.framework, mode)].jit
        got, got_state = state.split(answers[mode])
        checked = work.check(got, *((out_part, nojit_mode) if jit else ()))
        checked.fields.update(state.fields)
        if jit and state_part is not None and not checked.nojit_mismatch:
            c = compare(got_state, state_part, work.rtol, state_atol, precision=precision)
            if not c["within"]:
                checked.nojit_mismatch = mismatch_text(
                    c, work.rtol, state_atol, f"{nojit_mode}'s (JIT off)", precision,
                    what_differs="state after one step from the same start")
        return checked, checked.mismatch or checked.nojit_mismatch

    return out + rows.group_rows(spec.modes, results, row=row, adapter=adapter,
                                 protocol=protocol, flops=flops, rtol=work.rtol,
                                 atol=work.atol, check=check, counters=counts,
                                 precision=precision, extra=lambda mode, r: {
                                     **spec.fields(), **spec.per_mode.get(mode, {}),
                                     **_donation(built.get(mode))})


def _donation(fn) -> dict[str, Any]:
    """A donating mode's row: how many of the state's buffers XLA reused (``donation_held``,
    "N of M"; fewer than all: JAX warned that it could not use the rest)."""
    held = getattr(fn, "donation_held", None)
    return {"donation_held": held} if held is not None else {}


@dataclasses.dataclass
class State:
    """The state a user's function changes, as found (``adapter.user_state``): ``stages`` to
    build (a :class:`TrainStep` over the variables, or the plain function), the ``fields`` its
    rows carry, and ``why`` none was found when looking failed."""

    stages: list
    variables: dict[str, Any]
    why: str | None = None

    @classmethod
    def find(cls, adapter, spec: Spec, work: Casework) -> "State":
        found, why = adapter.user_state(spec.fn, work.placed, work.device)
        if not found:
            return cls([spec.fn], {}, why)
        named: dict[str, Any] = {}
        for v in found:  # by name, for the path a mismatch names
            name = str(getattr(v, "name", "variable"))
            named[name if name not in named else f"{name}#{len(named)}"] = v
        adapter.reset()  # looking ran the initializers of variables made on the first call
        return cls([TrainStep(lambda: (spec.fn, named), check_steps=1)], named, why)

    @property
    def fields(self) -> dict[str, Any]:
        if self.variables:
            return {"state": f"{len(self.variables)} variables saved before the first call; "
                             f"each mode checked after one step from them"}
        return {"state": f"none found: {self.why}"} if self.why else {}

    def split(self, answer) -> tuple[Any, Any]:
        """(output, state after the step) of an answer; state None for a plain function."""
        if answer is None or not self.variables:
            return answer, None
        return answer

    def unrepeatable(self, work: Casework, fn, nojit) -> str | None:
        """Why the outputs cannot be checked, or None: the JIT-off mode ``fn`` called again
        from the same start (the saved state, or the same inputs) answers otherwise than
        ``nojit`` beyond the output check's tolerance (``work.rtol``, ``work.atol``)."""
        if fn is None or nojit is None:
            return None
        if isinstance(fn, Stepping):
            again = work.answer(fn)
        else:
            out = fn(*work.placed)
            work.adapter.sync(out)
            again = work.adapter.to_numpy(out)
        c = compare(self.split(again)[0], self.split(nojit)[0], work.rtol, work.atol)
        if c["within"]:
            return None
        start = "its saved state" if self.variables else "the same inputs"
        found = f"; {self.why}" if self.why else ""
        return (f"two calls with JIT off from {start} answered differently (max rel err "
                f"{c['max_rel_err']:.3g}): it keeps state jitbench cannot save and restore (a "
                f"Python object it changes, unseeded random numbers{found}), so no mode's "
                f"output is checked")

    def put_back(self, built: Mapping[str, Any]) -> None:
        """The state as it was before the first call (the user's model left untrained). Every
        built mode steps the same variables, so restarting one puts them all back."""
        for fn in built.values():
            if isinstance(fn, Stepping):
                fn.restart()
                return


def _tolerance(nojit, dtype: str, rtol: float | None, atol: float | None
               ) -> tuple[float, float]:
    """(rtol, atol) of a check against ``nojit``: the user's, else by ``dtype`` and, for the
    absolute one, ``rtol`` times the largest finite value of ``nojit``."""
    import numpy as np

    from jitbench.protocol.correctness import flatten

    rtol = rtol if rtol is not None else RTOL.get(dtype, DEFAULT_RTOL)
    if atol is not None:
        return rtol, atol
    flat = flatten(nojit) if nojit is not None else np.zeros(0)
    flat = flat[np.isfinite(flat)]
    return rtol, rtol * float(np.abs(flat).max()) if flat.size else rtol


def _nojit(spec: Spec, work: Casework, results, answers, state: State) -> tuple[Any, str]:
    """The JIT-off answer the JIT-on modes are checked against: a measured JIT-off mode's, or
    one untimed call of the first JIT-off mode. ``UserError`` when the function fails with JIT
    off."""
    order = baselines_for(spec.framework)
    failed = [m for m in order if m in results and not results[m].ok]
    try:
        out, mode = work.nojit(answers, None if failed else (lambda: state.stages),
                               raise_errors=True)
    except Exception as exc:
        raise UserError(f"{spec.name} raised {type(exc).__name__} in {order[0]} mode (JIT "
                        f"off): {str(exc).strip()[:2000] or repr(exc)}") from exc
    if mode is None:  # every JIT-off mode measured failed
        r = results[failed[0]]
        raise UserError(f"{spec.name} raised {type(r.error).__name__} in {failed[0]} mode "
                        f"(JIT off, {r.error_phase.replace('_', ' ')}): "
                        f"{str(r.error).strip()[:2000] or repr(r.error)}")
    return out, mode
