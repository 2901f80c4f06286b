"""A step that carries state from call to call, as users pass it: donated JAX state, flax
NNX objects changed in place, and TF variables the step assigns.

- ``donate=K`` (or ``jax.jit(step, donate_argnums=K)``): argument K is state the step returns
  anew; every mode calls the step as a training loop does, the new state carried from call to
  call, and the ``donate`` mode runs beside the others (:func:`donating`,
  :func:`declared_donation`).
- flax NNX objects among the arguments: the step changes them in place, so it runs op by op
  or under ``nnx.jit`` only (:func:`nnx_modes`).
- TF variables the function assigns (a Keras model's weights and optimizer): saved before the
  first call, each mode checked after one step from them, put back at the end (:class:`State`).

A flax linen or optax step needs nothing of its own here: its state is a pytree of arrays,
an argument like any other (or donated with ``donate=K``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitbench.errors import UserError
from jitbench.frameworks import Stepping, TrainStep, nnx_object
from jitbench.protocol import trees
from jitbench.protocol.case_setup import Casework
from jitbench.protocol.correctness import compare
from jitbench.userfn.functions import NAMES, static_stage


def declared_donation(fn, args: tuple, donated: tuple[int, ...], static, fw, adapter,
                      unwrapped: str | None) -> tuple[Callable, tuple, int | None, str]:
    """``jitbench.measure(jax.jit(step, donate_argnums=K), ...)``: the jit's donation measured
    as ``donate=K`` is (:func:`donating`) where K is one argument the step returns anew;
    otherwise left out, and the summary says why (a donated input cannot be passed again, so
    a step that does not return it cannot be called in a loop). (the function, its arguments,
    the argument donated or None, what the summary calls the decorator)."""
    said = f"{unwrapped}(donate_argnums={donated[0] if len(donated) == 1 else donated})"
    if len(donated) > 1:
        return fn, args, None, (f"{said}; its donation left out: jitbench donates one "
                                f"argument (pass donate=K)")
    try:
        return (*donating(fn, args, donated[0], static, fw, adapter), donated[0], said)
    except UserError as exc:
        return fn, args, None, f"{said}; its donation left out: {str(exc).partition(': ')[2]}"


def donating(fn: Callable, args: tuple, position: Any, static: tuple[int, ...], fw: str,
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
    index = adapter.returned_again(static_stage(fn, static), args, position)
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


def donation_fields(fn) -> dict[str, Any]:
    """A donating mode's row: how many of the state's buffers XLA reused (``donation_held``,
    "N of M"; fewer than all: JAX warned that it could not use the rest)."""
    held = getattr(fn, "donation_held", None)
    return {"donation_held": held} if held is not None else {}


def nnx_modes(args: tuple, framework: str | None, static: tuple[int, ...],
              modes: Sequence[str] | str | None
              ) -> tuple[str | None, tuple[int, ...], Sequence[str] | str | None]:
    """(framework, static positions, modes) for a step given flax NNX objects, which it
    changes in place: JAX, nothing static (the objects are graph nodes, not hashable values),
    and the NNX modes only (``NNX_MODES``: op by op or under ``nnx.jit``); ``UserError``
    naming the other modes asked for. Anything else is returned as it came."""
    if not any(map(nnx_object, args)):
        return framework, static, modes
    from jitbench.frameworks.jax_modes import NNX_MODES

    if modes is not None and set([modes] if isinstance(modes, str) else modes) - set(
            NNX_MODES):
        raise UserError(f"modes={modes!r}: a step that changes flax NNX objects in place "
                        f"runs in {', '.join(NNX_MODES)} only (nnx.jit); for the other "
                        f"modes write it in NNX's functional form (nnx.split, nnx.merge)")
    return framework or "jax", (), modes if modes is not None else list(NNX_MODES)


@dataclasses.dataclass
class State:
    """The state a user's function changes, as found (``adapter.user_state``): ``stages`` to
    build (a :class:`TrainStep` over the variables, or the plain function), the ``fields`` its
    rows carry, and ``why`` none was found when looking failed."""

    stages: list
    variables: dict[str, Any]
    why: str | None = None

    @classmethod
    def find(cls, adapter, fn: Callable, work: Casework) -> State:
        found, why = adapter.user_state(fn, work.placed, work.device)
        if not found:
            return cls([fn], {}, why)
        named: dict[str, Any] = {}
        for v in found:  # by name, for the path a mismatch names
            name = str(getattr(v, "name", "variable"))
            named[name if name not in named else f"{name}#{len(named)}"] = v
        adapter.reset()  # looking ran the initializers of variables made on the first call
        return cls([TrainStep(lambda: (fn, named), check_steps=1)], named, why)

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
