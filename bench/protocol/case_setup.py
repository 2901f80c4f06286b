"""The work around a measurement, shared by every front door: inputs, modes, numerics.

Contract: a :class:`Casework` is one computation (``stages``, as a framework builder returns
them, or ``[fn]`` for a user's own function) on one set of inputs, for one framework adapter
and device. It

- places the numpy ``inputs`` on the device once (:attr:`Casework.placed`), for every mode;
- builds each mode as a :class:`~jitbench.protocol.timing.Timed` the timing core can call with no
argument
  (:meth:`timed`), optionally wrapped by the caller (the worker marks which mode is running);
- picks the JIT-off answer the JIT-on modes are compared with (:meth:`nojit`), in the order
  ``jitbench.define.modes.baselines_for`` gives, computing one when no JIT-off mode ran;
- checks an output (:meth:`check`) against the float64 ``reference`` (when there is one) and
  against that JIT-off answer, at the precision the products ran at (``precision``, with the
  workload's ``reduction`` length; ``jitbench.protocol.correctness``): the row fields
  ``max_abs_err``, ``max_rel_err``, ``norm_rel_err``, ``max_abs_err_vs_nojit``,
  ``max_rel_err_vs_nojit``, ``nojit_mode``, and the mismatch text.

It measures nothing and writes no row: the caller times the :class:`Timed` modes
(``jitbench.protocol.timing``) and builds the row (``jitbench.results.row``). For a registered
workload, :func:`workload_inputs` and :func:`workload_reference` make the inputs from the
case's seed and the float64 reference; a user's function (``jitbench.userfn.as_workload``)
brings its own inputs, some of them maybe not arrays (``arrays_only``), and optionally a
reference; its tolerance is set (``rtol``, ``atol``) once the JIT-off answer is known.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

from jitbench.define.modes import baselines_for
from jitbench.define.workload import Case
from jitbench.frameworks import Stepping
from jitbench.protocol.correctness import JIT_ERROR_FACTOR, compare, far_above
from jitbench.protocol import trees
from jitbench.protocol.samples import Timed


def workload_inputs(workload, case: Case) -> list:
    """The case's inputs, as numpy arrays, from its seed (the same in every mode and worker)."""
    import numpy as np

    return workload.inputs(case.params, case.dtype, np.random.default_rng(case.seed))


def workload_reference(workload, case: Case, inputs: Sequence[Any]) -> Any:
    """The workload's answer computed by numpy in float64 from the same inputs (each input an
    array or a pytree of them)."""
    import numpy as np

    return workload.reference(trees.map_arrays(lambda a: np.asarray(a, dtype=np.float64),
                                               list(inputs)), case.params, case.variant)


def mismatch_text(check: Mapping[str, Any], rtol: float, atol: float,
                  what: str = "the float64 reference", precision: str | None = None,
                  what_differs: str = "output") -> str:
    bound = (f"; at {precision} normwise <= {check['bound']:.3g}" if "bound" in check else "")
    normwise = (f", normwise {check['norm_rel_err']:.3g}" if "norm_rel_err" in check else "")
    where = f" (most at {check['leaf']})" if check.get("leaf") else ""
    return (f"{what_differs} differs from {what}{where}: max abs err "
            f"{check['max_abs_err']:.3g}, max rel err {check['max_rel_err']:.3g}{normwise} "
            f"(tolerance rtol={rtol:g}, atol={atol:g}{bound})")


@dataclasses.dataclass
class Checked:
    """An output checked: ``fields`` for the row, ``mismatch`` the error text when it is
    outside the tolerance of the reference (None when within, or when there is no
    reference), ``nojit_mismatch`` the same against the JIT-off answer, ``output`` the output
    as numpy."""

    fields: dict[str, Any]
    mismatch: str | None
    output: Any
    nojit_mismatch: str | None = None


class Casework:
    """One computation on one set of placed inputs (see the module docstring)."""

    def __init__(self, adapter, framework: str, device: str, inputs: Sequence[Any],
                 reference: Any = None, rtol: float = 0.0, atol: float = 0.0,
                 arrays_only: bool = False, reference_label: str = "the float64 reference",
                 precision: str | None = None, reduction: int | None = None):
        """``arrays_only``: place only the array leaves of the inputs (each input may be a
        pytree, ``jitbench.protocol.trees``; numpy or framework arrays, as numpy first); other
        leaves (a user's static arguments) are passed as they are. Otherwise every input is a
        numpy array, or a pytree of them (a workload's parameters), placed leaf by leaf. ``precision``: what the float32 products run at here
        (``adapter.matmul_precision``), ``reduction``: the
        workload's reduction length (``jitbench.protocol.correctness.normwise_bound``)."""
        self.adapter = adapter
        self.precision, self.reduction = precision, reduction
        self.framework = framework
        self.device = device
        self.reference, self.reference_label = reference, reference_label
        self.rtol, self.atol = rtol, atol
        self._nojit_err: tuple[Any, float] | None = None  # (JIT-off answer, its error)
        if not arrays_only and all(trees.is_array(x) for x in inputs):
            self.placed = adapter.place(inputs, device)
            return
        import numpy as np

        # every array leaf of every input (a pytree: a user's parameters), placed at once
        placed = iter(adapter.place([np.asarray(a) for _, a in trees.arrays(list(inputs))],
                                    device))
        self.placed = trees.map_arrays(lambda a: next(placed), list(inputs))

    def build(self, stages: Sequence[Callable], mode: str) -> Callable:
        """``stages`` built in ``mode``; call it with ``*self.placed``."""
        return self.adapter.build(stages, mode, self.device)

    def timed(self, mode: str, fn: Callable,
              wrap: Callable[[str, Callable, Sequence[Any]], Callable[[], Any]] | None = None
              ) -> Timed:
        """``fn`` (a built mode) on the placed inputs, ready for ``jitbench.protocol.timing``;
        ``wrap(mode, fn, placed)`` replaces the plain ``lambda: fn(*placed)``."""
        placed = self.placed
        call = wrap(mode, fn, placed) if wrap else (lambda: fn(*placed))
        pending = getattr(fn, "pending", None) if isinstance(fn, Stepping) else None
        ahead = self.adapter.dispatches_ahead(self.device)
        if pending is None:
            return Timed(mode, call, self.adapter.sync, ahead)
        sync = self.adapter.sync
        # a training step's sample ends when its new state is ready, not only its loss
        return Timed(mode, call, lambda out: sync((out, pending())), ahead)

    def answer(self, fn: Callable, output: Any = None) -> Any:
        """What a built mode's answer is checked by: ``output`` (its first call's), or, for a
        training step (:class:`~jitbench.frameworks.Stepping`), its output and shown state after
        ``check_steps`` steps from the initial state, run again here, untimed."""
        if isinstance(fn, Stepping):
            return fn.answer(*self.placed, to_numpy=self.adapter.to_numpy)
        return output

    def nojit(self, outputs: Mapping[str, Any],
              stages: Callable[[], Sequence[Callable]] | None = None,
              announce: Callable[[str], None] | None = None,
              raise_errors: bool = False) -> tuple[Any, str | None]:
        """(numpy output, mode) of the first JIT-off mode in ``outputs`` (mode -> output of
        the modes that ran fine), in ``baselines_for`` order. With none there and ``stages``
        given (a function returning them), the first JIT-off mode is built and called once
        (``announce(mode)`` first); (None, None) when that fails too: the row then has no
        ``*_vs_nojit`` fields. ``raise_errors``: that call's exception propagates instead (a
        user's function failing with JIT off is itself broken)."""
        order = baselines_for(self.framework)
        for mode in order:
            if mode in outputs:
                return self.adapter.to_numpy(outputs[mode]), mode
        if stages is None or not order:
            return None, None
        mode = order[0]
        if announce:
            announce(mode)
        try:
            fn = self.build(stages(), mode)
            out = fn.answer(*self.placed) if isinstance(fn, Stepping) else fn(*self.placed)
            return self.adapter.to_numpy(out), mode
        except Exception:  # noqa: BLE001 -- no JIT-off answer to compare with; rows say so
            if raise_errors:
                raise
            return None, None

    def check(self, output: Any, nojit: Any = None, nojit_mode: str | None = None) -> Checked:
        """``output`` (a framework output) against the reference and the JIT-off answer."""
        out = self.adapter.to_numpy(output)
        fields: dict[str, Any] = {}
        mismatch = vs_off = None
        at = dict(precision=self.precision, reduction=self.reduction)
        if self.reference is not None:
            vs_ref = compare(out, self.reference, self.rtol, self.atol, **at)
            fields.update(max_abs_err=vs_ref["max_abs_err"], max_rel_err=vs_ref["max_rel_err"],
                          norm_rel_err=vs_ref["norm_rel_err"])
            if not vs_ref["within"]:
                mismatch = mismatch_text(vs_ref, self.rtol, self.atol, self.reference_label,
                                         self.precision)
            elif nojit is not None:
                off_err = self._nojit_error(nojit)
                if far_above(vs_ref["norm_rel_err"], off_err, self.precision,
                             self.reduction):
                    mismatch = (f"output is {vs_ref['norm_rel_err']:.3g} from "
                                f"{self.reference_label} (normwise), over {JIT_ERROR_FACTOR:g}x "
                                f"the {off_err:.3g} of {nojit_mode} (JIT off) at the same "
                                f"precision ({self.precision or 'as run'})")
        if nojit is not None:
            c = compare(out, nojit, self.rtol, self.atol, **at)
            fields.update(max_abs_err_vs_nojit=c["max_abs_err"],
                          max_rel_err_vs_nojit=c["max_rel_err"], nojit_mode=nojit_mode)
            if not c["within"]:
                vs_off = mismatch_text(c, self.rtol, self.atol, f"{nojit_mode} (JIT off)",
                                       self.precision)
        return Checked(fields, mismatch, out, vs_off)

    def _nojit_error(self, nojit: Any) -> float:
        """The JIT-off answer's normwise error against the reference, computed once for the
        group's modes (each JIT mode's check reads it)."""
        kept = self._nojit_err
        if kept is None or kept[0] is not nojit:
            kept = self._nojit_err = (nojit, compare(nojit, self.reference, self.rtol,
                                                     self.atol)["norm_rel_err"])
        return kept[1]


def on_device(adapter, device: str):
    """The adapter's ``device_scope(device)`` (a workload's builder called under it puts its
    constants on the worker's device), or a no-op where the adapter has none."""
    import contextlib

    scope = getattr(adapter, "device_scope", None)
    return scope(device) if scope is not None else contextlib.nullcontext()


def matmul_precision(adapter, device: str, dtype: str) -> str | None:
    """What ``dtype`` products run at on ``device`` (``adapter.matmul_precision``), or None
    where the adapter cannot tell (then outputs are checked at the dtype's own precision)."""
    try:
        return adapter.matmul_precision(device, dtype)
    except Exception:  # noqa: BLE001 -- an extra fact; the check falls back to the dtype's
        return None
