"""The option objects of ``jitbench.measure`` and the ``jit_benchmark`` fixture, and the rules
for options that only go together one way.

    from jitbench import Sampling, Tolerances
    QUICK = Sampling(precision=0.1, budget=2)
    r = jitbench.measure(step, x, y, sampling=QUICK, tolerances=Tolerances(rtol=1e-2))

- :class:`Tolerances`: how far a JIT-on output may be from the JIT-off one (and from
  ``reference``): ``rtol``, ``atol``.
- :class:`Sampling`: when sampling stops: ``precision``, ``budget``.

Both are frozen, so one object serves a whole test module. ``rtol=``, ``atol=``,
``precision=`` and ``budget=`` are shorthand for them (:func:`option_objects`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from jitbench.errors import UserError

if TYPE_CHECKING:
    from jitbench.protocol.settings import Protocol

# Default relative tolerance of a JIT-on output against the JIT-off one, by dtype. The absolute
# tolerance defaults to rtol × max|JIT-off output|: XLA may sum in another order, and elements
# that cancel to ~0 must not fail an element-wise test.
RTOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-3, "float64": 1e-7}
DEFAULT_RTOL = 1e-3


@dataclasses.dataclass(frozen=True)
class Tolerances:
    """How far each JIT-on output may be from the JIT-off one, and every output from
    ``reference``: ``rtol`` (relative; None: by dtype, 1e-3 for float32) and ``atol``
    (absolute; None: ``rtol`` × the largest finite value of the JIT-off output). Raises
    ``jitbench.UserError`` for a value that is not a number ≥ 0."""

    rtol: float | None = None
    atol: float | None = None

    def __post_init__(self):
        for label, v in (("rtol", self.rtol), ("atol", self.atol)):
            if v is not None and not (isinstance(v, (int, float)) and v >= 0):
                raise UserError(f"{label} must be a number ≥ 0, not {v!r}")

    def against(self, nojit, dtype: str) -> tuple[float, float]:
        """(rtol, atol) of a check against ``nojit`` (the JIT-off answer, or None) for
        outputs of ``dtype``: the ones given, else the defaults above."""
        import numpy as np
        from jitbench.protocol.correctness import flatten

        rtol = self.rtol if self.rtol is not None else RTOL.get(dtype, DEFAULT_RTOL)
        if self.atol is not None:
            return rtol, self.atol
        flat = flatten(nojit) if nojit is not None else np.zeros(0)
        flat = flat[np.isfinite(flat)]
        return rtol, rtol * float(np.abs(flat).max()) if flat.size else rtol


@dataclasses.dataclass(frozen=True)
class Sampling:
    """When sampling stops: ``precision``, a fraction in (0, 1) (default 0.05: each JIT mode's
    verdict against its nearest JIT-off mode known to +-5%) or ``"off"`` (the fixed protocol:
    its ``min_time`` per mode); ``budget``, seconds of interleaved sampling at most (default
    6). None keeps the protocol's. Raises ``jitbench.UserError`` naming a bad value and the
    valid ones."""

    precision: float | str | None = None
    budget: float | None = None

    def __post_init__(self):
        p, b = self.precision, self.budget
        if p is not None and not (
                (isinstance(p, str) and p.strip().lower() == "off")
                or (isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p < 1)):
            raise UserError(f"precision={p!r}: give a fraction in (0, 1) such as 0.05 "
                            f"(+-5%), or 'off' for the fixed protocol")
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float))
                              or not 0 < b < math.inf):
            raise UserError(f"budget={b!r}: give the seconds of sampling per group, a "
                            f"number > 0 such as 6")

    def applied_to(self, protocol: Protocol) -> Protocol:
        """``protocol`` with this precision and budget where they are set."""
        changes: dict[str, Any] = {}
        if isinstance(self.precision, str):
            changes["precision"] = None
        elif self.precision is not None:
            changes["precision"] = float(self.precision)
        if self.budget is not None:
            changes["budget"] = float(self.budget)
        return dataclasses.replace(protocol, **changes) if changes else protocol


def option_objects(tolerances: Any = None, sampling: Any = None, *, rtol=None, atol=None,
                   precision=None, budget=None) -> tuple[Tolerances, Sampling]:
    """The option objects of one call: ``tolerances`` and ``sampling`` as given, or made from
    their shorthand keywords. ``UserError`` for an object of another type, and for a
    shorthand given beside its object (which one was meant is unclear)."""
    out = []
    for label, given, kind, shorthand in (
            ("tolerances", tolerances, Tolerances, {"rtol": rtol, "atol": atol}),
            ("sampling", sampling, Sampling, {"precision": precision, "budget": budget})):
        set_ = {k: v for k, v in shorthand.items() if v is not None}
        fields = ", ".join(f"{k}=..." for k in shorthand)
        if given is None:
            out.append(kind(**set_))
            continue
        if not isinstance(given, kind):
            raise UserError(f"{label}={given!r}: give a jitbench.{kind.__name__}({fields})")
        if set_:
            name = next(iter(set_))
            raise UserError(f"{name}= is given beside {label}=: put it in "
                            f"{label}=jitbench.{kind.__name__}({fields}), or give "
                            f"{', '.join(f'{k}=' for k in shorthand)} alone")
        out.append(given)
    return out[0], out[1]


def check_options(isolate: bool, timeout, donate, batch_size) -> None:
    """The options of ``jitbench.measure`` and the ``jit_benchmark`` fixture that only go
    together one way; ``UserError`` naming the pair otherwise."""
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0
                                    and math.isfinite(timeout)):
        raise UserError(f"timeout must be a finite number of seconds > 0, not {timeout!r}")
    if isolate and batch_size is not None:
        raise UserError(f"batch_size={batch_size!r} is measured in this process: leave out "
                        f"isolate=True")
    if isolate and donate is not None:
        raise UserError(f"donate={donate!r} is measured in this process: leave out isolate=True")
    if timeout is not None and not isolate:
        raise UserError("timeout needs isolate=True: a function that hangs in this process "
                        "cannot be stopped; jitbench.measure(..., isolate=True, timeout=...) "
                        "measures it in a worker that can be killed")
