"""``jitbench.measure(..., isolate=True)``: the measurement in worker processes.

One worker per environment the requested modes need (``Mode.worker_group``; today one per
framework), started by a loop of workers that belongs to no run
(``jitbench.run.session.loop_outside_a_run``: its log, its start-up timeout, its process group
killed on a timeout), which imports the adapter before
the framework starts (so TF auto-clustering's flag takes effect) and runs :func:`worker_job`. A
crash of the function ends the worker, not the caller's session: its modes come back as
``crashed`` rows carrying the end of the log; a function that outlasts ``timeout`` seconds as
``timeout`` rows (``jitbench.results.row``, like the runner's).

The worker imports the function by ``module:qualname``, so a lambda, a nested function or one
defined in ``__main__`` (a notebook) is refused with a ``UserError`` saying so. Inputs travel as
pytrees of numpy arrays (pickled); the reference is computed in the caller.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

from jitbench.define.modes import MODES
from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol
from jitbench.results import row as rows
from jitbench.run.session import loop_outside_a_run
from jitbench.run.worker import OWN_PROCESS_ENV, protocol_of, resolve
from jitbench.run.worker_parent import JobFailed, WorkerFailed
from jitbench.userfn.options import Tolerances

DEFAULT_TIMEOUT_S = 1800.0  # per worker: starting it, then measuring its modes


def importable_name(fn) -> str:
    """``module:qualname`` of ``fn``, checked by importing it here; ``UserError`` otherwise."""
    module = getattr(fn, "__module__", None)
    qual = getattr(fn, "__qualname__", None)
    label = getattr(fn, "__name__", repr(fn))
    problem = None
    if not module or not qual:
        problem = "it has no __module__ and __qualname__"
    elif module == "__main__":
        problem = ("it is defined in __main__ (the notebook or script being run), which a "
                   "worker process cannot import")
    elif "<" in qual:
        problem = ("it is a lambda" if "<lambda>" in qual else "it is defined inside a "
                   "function") + f" ({qual})"
    else:
        try:
            obj = resolve(f"{module}:{qual}")
        except (ImportError, AttributeError) as exc:
            problem = f"{module}:{qual} cannot be imported ({exc})"
        else:
            if obj is not fn:
                problem = f"{module}:{qual} is another object"
    if problem:
        raise UserError(f"isolate=True needs a function that a worker process can import as "
                        f"module:qualname, and {label} is not: {problem}; define it in a "
                        f"module, or measure in this process (isolate=False)")
    return f"{module}:{qual}"


def measure_isolated(fn, args, *, modes, framework, reference, tolerances: Tolerances, flops,
                     device, name, protocol: Protocol, timeout: float | None = None,
                     kwargs=None) -> list[dict[str, Any]]:
    """Rows of every requested mode, each group of modes measured in a worker of its own, which
    gets ``timeout`` seconds (default :data:`DEFAULT_TIMEOUT_S`) to start and to measure.
    ``kwargs``: the function's keyword arguments, sent by name as numpy pytrees too."""
    from jitbench.protocol import trees
    from jitbench.userfn.as_workload import prepare

    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    target = importable_name(fn)
    # checks the arguments (and computes the reference) here; the workers' environments decide
    # what runs where, so no mode is "skipped for this process"
    spec = prepare(fn, args, framework=framework, modes=modes, reference=reference,
                   tolerances=tolerances, flops=flops, device=device, name=name, here=False,
                   kwargs=kwargs)
    groups: dict[str, list[str]] = {}
    for m in spec.modes:  # checked, JIT-off first; every one of them with modes=None
        groups.setdefault(MODES[(spec.framework, m)].worker_group, []).append(m)
    np_args = trees.map_arrays(_np, list(spec.args))  # pytrees of numpy arrays
    n = len(np_args) - len(spec.keywords)  # the keywords go back by name (prepare folds them)
    np_args, np_kwargs = np_args[:n], dict(zip(spec.keywords, np_args[n:]))
    out_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="jitbench-isolate-") as tmp:
        for group, group_modes in groups.items():
            job = {"target": target, "args": np_args, "kwargs": np_kwargs,
                   "framework": spec.framework,
                   "modes": group_modes, "reference": spec.reference,
                   "tolerances": tolerances, "flops": flops, "device": device, "name": spec.name,
                   "protocol": dataclasses.asdict(protocol)}
            job_path = Path(tmp, f"{group}.job")
            job_path.write_bytes(pickle.dumps(job))
            out_rows.extend(_in_worker(spec, group_modes, job_path, Path(tmp), timeout))
    return out_rows


def _in_worker(spec, group_modes: list[str], job_path: Path, folder: Path,
               timeout: float) -> list[dict[str, Any]]:
    """One worker's rows (its log under ``folder``); ``crashed`` or ``timeout`` rows for its
    modes when it fails."""
    from jitbench.userfn.as_workload import case_of

    # the worker imports the function as this process would: same sys.path, same folder
    loop = loop_outside_a_run(timeout, folder, {OWN_PROCESS_ENV: "0"},
                              {"cwd": os.getcwd(), "startup_timeout": timeout,
                               "import_paths": [p or os.getcwd() for p in sys.path]})
    try:
        group = MODES[(spec.framework, group_modes[0])].worker_group
        return loop.run_job((spec.framework, group, spec.device or "cpu"),
                            {"handler": f"{__name__}:worker_job", "job_path": str(job_path)},
                            f"measuring {spec.name} ({', '.join(group_modes)})",
                            limit="timeout=")
    except JobFailed as exc:
        if exc.kind == "user_error":
            raise UserError(str(exc)) from None
        status, why, exit_ = "crashed", f"the worker failed: {exc}", None
    except WorkerFailed as exc:
        status, why, exit_ = exc.status, str(exc), exc.exit
    finally:
        loop.close()
    # a user's function expects no failure: no expected_failure lookup (rows.failure)
    return [rows.new_row(case_of(spec, m), status=status, error=why[-4000:],
                         worker_exit=exit_) for m in group_modes]


def _np(a):
    import numpy as np

    return np.asarray(a)


def worker_job(adapter, msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The worker's side (``jitbench.run.worker`` calls it with its adapter): the pickled job's
    function prepared and measured in this process; a ``UserError`` goes back to the caller."""
    from jitbench.userfn.as_workload import prepare, run, use_adapter

    job = pickle.loads(Path(msg["job_path"]).read_bytes())
    use_adapter(job["framework"], adapter)  # made before the function's module is imported
    fn = resolve(job["target"])
    spec = prepare(fn, job["args"], framework=job["framework"], modes=job["modes"],
                   reference=job["reference"], tolerances=job["tolerances"],
                   flops=job["flops"], device=job["device"], name=job["name"],
                   kwargs=job.get("kwargs"))
    return run(spec, protocol_of(job["protocol"]), counts=True)
