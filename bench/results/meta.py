"""meta.json: what a run was measured on and how, so a number can be trusted later.

``status``: ``running`` while a jitbench process writes the run, then ``complete``,
``interrupted`` (Ctrl-C, SIGTERM, SIGHUP: ``interrupted_by`` names the signal; continue it with
``jitbench run --resume RUN_DIR``) or ``failed`` (a bug of jitbench itself stopped it). A run
left ``running`` by a process that was killed outright can be resumed too. Each resume is
listed under ``resumes``; ``elapsed_s`` adds up every session.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from jitbench import launch
from jitbench.results import installed
from jitbench.protocol import gpu_state

ENV_PREFIXES = ("TF_", "XLA_", "JAX_", "OMP_", "MKL_", "OPENBLAS_", "CUDA_", "NVIDIA_")
# the test hook that plants a slowdown (jitbench.run.worker): part of what a night ran with, so a
# planted night is a change night, as a real one is
ENV_NAMES = ("JITBENCH_TEST_SLOWDOWN",)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        return None
    return None


def git_commit() -> str | None:
    root = str(Path(__file__).resolve().parents[2])
    out = launch.tool(["git", "rev-parse", "HEAD"], 10, cwd=root)
    dirty = launch.tool(["git", "status", "--porcelain", "--untracked-files=no"], 10, cwd=root)
    if out is None or dirty is None or out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def jitbench_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jitbench")
    except PackageNotFoundError:
        return None


def harness_fingerprint() -> str:
    """A fingerprint of jitbench's own code, its workloads left out (each has its own,
    ``workload_sources``): a night whose workload file changed but whose harness did not is a
    workload change, measured side by side (``jitbench.nightly.change``); a commit that only
    touched a workload changes the commit, not this."""
    import hashlib

    root = Path(__file__).resolve().parents[1]  # the installed jitbench package
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("suites/") or "__pycache__" in rel:
            continue
        digest.update(rel.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def gpus() -> list[dict[str, str]]:
    """GPU name, driver and memory from nvidia-smi, where there is one."""
    out = launch.tool(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                       "--format=csv,noheader"], 20)
    if out is None or out.returncode != 0:
        return []
    keys = ("name", "driver_version", "memory_total")
    return [dict(zip(keys, (x.strip() for x in line.split(","))))
            for line in out.stdout.strip().splitlines() if line.strip()]


def installed_version(*names: str) -> str | None:
    """The installed version of the first of ``names`` (pip distributions) that is installed,
    read without importing it."""
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def collect(run_id: str, command: Sequence[str], protocol, n_cases: int) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "status": "running",
        "started_at": _now(),
        "finished_at": None,
        "command": list(command),
        "n_cases": n_cases,
        "protocol": dataclasses.asdict(protocol),
        "machine": {"hostname": platform.node(), "platform": platform.platform(),
                    "python": platform.python_version(), "executable": sys.executable,
                    "cpu_model": cpu_model(),
                    "cpu_count": os.cpu_count(),
                    "cpu_affinity": len(os.sched_getaffinity(0))
                    if hasattr(os, "sched_getaffinity") else None,
                    "memory_gb": _memory_gb(), "gpus": gpus(),
                    # the GPU's clocks, temperature and power as the run began and ended
                    # (jitbench.protocol.gpu_state; None without a readable GPU)
                    "gpu_state_start": gpu_state.read(), "gpu_state_end": None},
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(ENV_PREFIXES) or k in ENV_NAMES},
        "git_commit": git_commit(),
        "jitbench_version": jitbench_version(),
        "jitbench_fingerprint": harness_fingerprint(),
        "frameworks": {},
        # every distribution the workers' interpreter holds and which of them each framework
        # reaches (jitbench.results.installed): this process's path is theirs (the workers
        # start from this interpreter and environment, jitbench's own folder first)
        **installed.facts(),
        "devices": [],
        "workers": [],
    }


def add_worker(meta: dict[str, Any], hello: dict[str, Any]) -> None:
    """Merge what a worker reported of its framework (versions, devices)."""
    meta["frameworks"].update(hello.get("versions", {}))
    for d in hello.get("devices", []):
        if d not in meta["devices"]:
            meta["devices"].append(d)
    # startup: the warm-up's first call per mode (jitbench.run.worker_warmup), the process start-up cost
    meta["workers"].append({k: hello.get(k) for k in ("pid", "framework", "env_group",
                                                       "startup", "cpu_affinity")})


def worker_failed(meta: dict[str, Any], pid: int | None, status: str, how: str,
                  during: str) -> None:
    """Note on the worker's entry how it ended, when it did not end normally."""
    for w in reversed(meta.get("workers", [])):
        if w.get("pid") == pid:
            w.update(failed=status, exit=how, during=during)
            return
    meta.setdefault("workers", []).append({"pid": pid, "failed": status, "exit": how,
                                           "during": during})


def write(run_dir: Path, meta: dict[str, Any], name: str = "meta.json") -> None:
    """``meta`` as ``run_dir/name``, at once (a sweep's record: ``sweep_meta.json``; a kept
    calibration)."""
    tmp = run_dir / f"{name}.tmp"
    tmp.write_text(json.dumps(meta, indent=2, default=str))
    os.replace(tmp, run_dir / name)  # never a half-written meta.json


def start_resume(run_dir: Path, meta: dict[str, Any], command: Sequence[str],
                 n_pending: int) -> None:
    """Mark a run as running again, for the cases it still lacks."""
    meta.setdefault("resumes", []).append({
        "started_at": _now(), "command": list(command), "n_cases": n_pending,
        "pid": os.getpid(), "git_commit": git_commit(),
        # a session killed outright never wrote its elapsed time: counted as 0
        "elapsed_before_s": meta.get("elapsed_s") or 0.0})
    meta["status"] = "running"
    meta.pop("interrupted_by", None)
    write(run_dir, meta)


def finish(run_dir: Path, meta: dict[str, Any], status: str, elapsed_s: float,
           interrupted_by: str | None = None, n_recorded: int | None = None,
           name: str = "meta.json") -> None:
    """``elapsed_s``: this session's time; meta's ``elapsed_s`` adds earlier sessions."""
    before = 0.0
    if meta.get("resumes"):
        last = meta["resumes"][-1]
        before = last.get("elapsed_before_s", 0.0)
        last.update(finished_at=_now(), status=status, elapsed_s=round(elapsed_s, 3))
    meta["status"] = status
    meta["finished_at"] = _now()
    if (meta.get("machine") or {}).get("gpu_state_start"):
        meta["machine"]["gpu_state_end"] = gpu_state.read()
    meta["elapsed_s"] = round(before + elapsed_s, 3)
    if interrupted_by:
        meta["interrupted_by"] = interrupted_by
    if n_recorded is not None:
        meta["n_recorded"] = n_recorded
    write(run_dir, meta, name)


def _machine_key(machine: Mapping[str, Any] | None) -> tuple:
    """What must match for shards' numbers to be comparable: CPU model and count, the GPUs'
    names and drivers."""
    m = machine or {}
    gpus_ = tuple((g.get("name"), g.get("driver_version")) for g in m.get("gpus") or [])
    return (m.get("cpu_model"), m.get("cpu_count"), gpus_)


def merged(metas: list[dict[str, Any]], run_id: str, n_cases: int) -> dict[str, Any]:
    """The meta of a run merged from shards: the first shard's, with the run id, the shards,
    the overall status and times, and every shard's machine (``shard_machines``); when they
    differ (another CPU, GPU or driver), ``machine_note`` says so: numbers of different
    machines are not one run's."""
    out = dict(metas[0]) if metas else {}
    out.update(run_id=run_id, shards=[m.get("shard") or m.get("run_id") for m in metas],
               status="complete" if all(m.get("status") == "complete" for m in metas)
               else "incomplete",
               started_at=min((m.get("started_at") or "" for m in metas), default=None),
               finished_at=max((m.get("finished_at") or "" for m in metas), default=None),
               n_cases=n_cases,
               shard_machines=[{"shard": m.get("shard") or m.get("run_id"),
                                "machine": m.get("machine")} for m in metas])
    kinds = {_machine_key(m.get("machine")) for m in metas}
    if len(kinds) > 1:
        out["machine_note"] = (f"the shards ran on {len(kinds)} different machines (CPU model "
                               f"and count, GPUs and drivers): compare their rows with care")
    return out

