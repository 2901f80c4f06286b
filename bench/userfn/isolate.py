"""``bench.measure(..., isolate=True)``: the measurement in worker processes.

    python -m bench.userfn.isolate JOB.pkl OUT.pkl LOG_PATH

One worker per environment the requested modes need (``Mode.worker_group``; today one per
framework), which imports the adapter before the framework starts (so TF auto-clustering's
flag takes effect). A worker points its stdout and stderr at LOG_PATH first, so TensorFlow's
compile counters (read from XLA's log) work there, and a crash of the function ends the worker,
not the caller's session: its modes come back as ``crashed`` rows carrying the end of the log
(``bench.results.row``, like the runner's).

The worker imports the function by ``module:qualname``, so a lambda, a nested function or one
defined in ``__main__`` (a notebook) is refused with a ``UserError`` saying so. Inputs travel as
numpy arrays (pickled); the reference is computed in the caller.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.define.modes import MODES
from bench.errors import UserError
from bench.protocol.timing import Protocol
from bench.results import row as rows
from bench.run import child_process




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


def resolve(target: str):
    module, _, qual = target.partition(":")
    obj = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def measure_isolated(fn, args, *, modes, framework, reference, rtol, atol, flops, device, name,
                     protocol: Protocol) -> list[dict[str, Any]]:
    """Rows of every requested mode, each group of modes measured in a worker of its own."""
    from bench.protocol.case_setup import is_array
    from bench.userfn.as_workload import case_of, prepare

    target = importable_name(fn)
    # checks the arguments (and computes the reference) here; the workers' environments decide
    # what runs where, so no mode is "skipped for this process"
    spec = prepare(fn, args, framework=framework, modes=modes, reference=reference,
                   rtol=rtol, atol=atol, flops=flops, device=device, name=name, here=False)
    groups: dict[str, list[str]] = {}
    for m in spec.modes:  # checked, JIT-off first; every one of them with modes=None
        groups.setdefault(MODES[(spec.framework, m)].worker_group, []).append(m)
    np_args = [_np(a) if is_array(a) else a for a in spec.args]
    out_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="jitbench-isolate-") as tmp:
        for group, group_modes in groups.items():
            job = {"target": target, "args": np_args, "framework": spec.framework,
                   "modes": group_modes, "reference": spec.reference, "rtol": rtol,
                   "atol": atol, "flops": flops, "device": device, "name": spec.name,
                   "protocol": dataclasses.asdict(protocol)}
            job_path, out_path = Path(tmp, f"{group}.job"), Path(tmp, f"{group}.out")
            log_path = Path(tmp, f"{group}.log")
            job_path.write_bytes(pickle.dumps(job))
            # the worker imports the function as this process would: same sys.path, same folder
            env = child_process.env(spec.framework, MODES[(spec.framework, group_modes[0])].env,
                                    import_paths=[p or os.getcwd() for p in sys.path])
            proc = subprocess.run([sys.executable, "-m", "bench.userfn.isolate", str(job_path),
                                   str(out_path), str(log_path)], env=env, check=False,
                                  stdin=subprocess.DEVNULL, cwd=os.getcwd())
            if out_path.is_file():
                out = pickle.loads(out_path.read_bytes())
                if "error" in out:
                    raise UserError(out["error"])
                out_rows.extend(out["rows"])
                continue
            why = (f"the worker measuring {', '.join(group_modes)} exited with code "
                   f"{proc.returncode} before answering; end of its log:\n"
                   f"{child_process.log_tail(log_path)}")
            # a user's function expects no failure: no expected_failure lookup (rows.failure)
            out_rows.extend(rows.new_row(case_of(spec, m), status="crashed", error=why[-4000:],
                                         worker_exit=proc.returncode) for m in group_modes)
    return out_rows


def _np(a):
    import numpy as np

    return np.asarray(a)


def main(argv: list[str]) -> int:
    job_path, out_path, log_path = argv
    child_process.output_to_log(log_path)  # results go to out_path, not to the original stdout
    job = pickle.loads(Path(job_path).read_bytes())
    from bench.userfn.as_workload import adapter_for, prepare, run

    try:
        # before the function's module is imported: the adapter goes first (TF's flags)
        adapter_for(job["framework"], log_path=log_path).counters()  # skip import-time lines
        fn = resolve(job["target"])
        spec = prepare(fn, job["args"], framework=job["framework"], modes=job["modes"],
                       reference=job["reference"], rtol=job["rtol"], atol=job["atol"],
                       flops=job["flops"], device=job["device"], name=job["name"])
        out: dict[str, Any] = {"rows": run(spec, Protocol(**job["protocol"]), counts=True)}
    except UserError as exc:
        out = {"error": str(exc)}
    Path(out_path).write_bytes(pickle.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
