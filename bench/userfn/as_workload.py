"""A user's own function run as a workload: the part shared by ``jitbench.measure``
(``jitbench.userfn.measure``), the ``jit_benchmark`` pytest fixture
(``jitbench.pytest_plugin.fixture``) and ``jitbench.userfn.isolate``'s workers.

``prepare`` checks what the user passed and raises one ``UserError`` naming the problem; what
each kind of thing a user passes needs is its own module's: a plain or jitted function
(``jitbench.userfn.functions``, its keyword and static arguments ``jitbench.userfn.arguments``),
a step that carries state (``jitbench.userfn.stateful``: donation, flax NNX, TF variables), a
Keras model (``jitbench.userfn.keras_model``, its ``fit`` ``jitbench.userfn.keras_fit``).
``run`` times the modes with ``jitbench.protocol.timing.measure`` (first call apart, warm-up
until compiles stop, synced samples, modes interleaved) on a
``jitbench.protocol.case_setup.Casework`` (inputs placed once, modes built, every JIT-on output
checked against the JIT-off one and against ``reference`` when given) and builds the rows with
``jitbench.results.row``, like a ``jitbench run`` worker's, so
``jitbench.results.files.to_frame`` and ``jitbench.analysis`` read them.

Nothing here imports TensorFlow or JAX: ``adapter_for`` imports the framework the inputs
already belong to (or the one named).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from jitbench.define.modes import (
    MODES,
    baselines_for,
    counts_in_process,
    environment_problem,
    modes_for,
    other_pairs,
    verdict_pairs,
)
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.protocol import trees
from jitbench.protocol.case_setup import Casework, Checked, matmul_precision, mismatch_text
from jitbench.protocol.correctness import compare
from jitbench.protocol.timing import Protocol, measure
from jitbench.results import row as rows
from jitbench.userfn.arguments import call_with, with_keywords
from jitbench.userfn.functions import infer_framework, static_stage, unwrap
from jitbench.userfn.keras_fit import fit_epochs
from jitbench.userfn.keras_model import first_batch, is_keras_model, training_step
from jitbench.userfn.options import Tolerances
from jitbench.userfn.stateful import State, declared_donation, donating, donation_fields, nnx_modes

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
    tolerances: Tolerances = dataclasses.field(default_factory=Tolerances)
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


def prepare(fn, args, *, framework=None, modes=None, reference=None,
            tolerances: Tolerances | None = None, flops=None, device=None, name=None, env=None,
            here: bool = True, donate: int | None = None, batch_size: int | None = None,
            kwargs=None) -> Spec:
    """Check the user's arguments; one ``UserError`` naming the problem. ``here``: it runs in
    this process, so its adapter is made (the framework the inputs belong to), the device
    chosen, and the modes this process cannot run (``env``: its environment as it started;
    ``os.environ`` by default) skipped; ``here=False`` (``jitbench.userfn.isolate``'s caller) checks
    only the arguments. ``kwargs``: the function's keyword arguments, checked by
    ``jitbench.userfn.arguments.keyword_arguments``, passed after ``args`` (``with_keywords``).
    ``tolerances``: checked where they were made (``jitbench.userfn.options.option_objects``)."""
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
    # flax NNX objects among them: changed in place, so op by op or under nnx.jit only
    framework, static, modes = nnx_modes(args, framework, static, modes)
    fw = infer_framework(args, framework)
    if device is not None and device not in ("cpu", "gpu"):
        raise UserError(f"unknown device {device!r}; valid: cpu, gpu")
    if flops is not None and not (isinstance(flops, (int, float)) and flops >= 0):
        raise UserError(f"flops must be a number ≥ 0, not {flops!r}")
    adapter = adapter_for(fw) if here else None
    if adapter is not None:
        device = choose_device(device, adapter)
    env = os.environ if env is None else env

    def problem(mode: str) -> str | None:
        if adapter is None:
            return None
        return environment_problem(fw, mode, env) or adapter.mode_problem(mode, device)

    if donate is not None:
        fn, args = donating(fn, args, donate, static, fw, adapter)
    elif donated and here:  # the jit's own donation, where it can be kept
        fn, args, donate, unwrapped = declared_donation(fn, args, donated, static, fw,
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
    return Spec(fn=fn if donate is not None else static_stage(fn, static), args=args,
                framework=fw, modes=run_, skipped=skipped, device=device, reference=reference,
                tolerances=tolerances or Tolerances(), flops=flops, name=name, source=source,
                unwrapped=unwrapped,
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
    """The :class:`~jitbench.define.workload.Case` a row of ``spec`` is about: the function's
    name as the workload, its input shapes as the size and (with their element count: the
    report orders sizes by a number when ``flops`` is not given) as the params, the first
    array's dtype."""
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
    call (``jitbench.userfn.stateful.State``), each mode's answer checked is its output
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
    state = State.find(adapter, spec.fn, work)
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
        work.rtol, work.atol = spec.tolerances.against(out_part, dtype)
        skip = state.unrepeatable(work, built.get(nojit_mode), nojit)
    finally:
        state.put_back(built)
    state_atol = spec.tolerances.against(state_part, dtype)[1]
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
                                     **donation_fields(built.get(mode))})


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
