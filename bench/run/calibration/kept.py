"""A calibration kept per machine and software: the next run on the same machine, booted the
same time, with the same frameworks, jitbench and worker settings, reads it instead of
measuring it again (``jitbench run --recalibrate`` measures it anyway).

What must match (:func:`facts`): the CPU model and the cores this process may use, the boot
(``/proc/sys/kernel/random/boot_id``: a host moves between sessions, and a new boot is a new
session), the GPUs and driver, each framework's installed version, jitbench's own code, the
calibration's version and cases (frameworks, devices, modes), and the variables its workers get
(process profile, matrix-product precision). A kept calibration older than :data:`MAX_AGE_S`
is measured again. Kept under ``$JITBENCH_CACHE`` (default ``$XDG_CACHE_HOME/jitbench`` or
``~/.cache/jitbench``), ``calibration/<digest>.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from jitbench.define.workload import Case

CACHE_ENV = "JITBENCH_CACHE"
MAX_AGE_S = 12 * 3600.0


def folder() -> Path:
    """Where kept calibrations live."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]) / "calibration"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jitbench" / "calibration"


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def facts(calibration_cases: Sequence[Case], worker_env: Mapping[str, str],
          version: int) -> dict[str, Any]:
    """What a kept calibration must have been measured with (see the module docstring)."""
    from jitbench.frameworks import framework_specs
    from jitbench.results import meta

    return {"version": version, "cpu_model": meta.cpu_model(), "cpu_count": os.cpu_count(),
            "cpu_affinity": sorted(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity") else None,
            "boot_id": _boot_id(), "gpus": meta.gpus(),
            "frameworks": {name: meta.installed_version(*dists)
                           for spec in framework_specs().values()
                           for name, dists in spec.distributions.items()},
            "jitbench": meta.harness_fingerprint(),
            "cases": sorted(c.case_id for c in calibration_cases),
            "worker_env": dict(sorted(worker_env.items()))}


def _path(what: Mapping[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode())
    return folder() / f"{digest.hexdigest()[:20]}.json"


def load(what: Mapping[str, Any], now: float | None = None) -> dict[str, Any] | None:
    """The calibration kept for ``what`` (:func:`facts`), with ``kept_from`` (the run that
    measured it, when) added; None when there is none, it is too old, or it cannot be read."""
    try:
        kept = json.loads(_path(what).read_text())
    except (OSError, ValueError):
        return None
    age = (time.time() if now is None else now) - float(kept.get("kept_at", 0))
    if kept.get("facts") != json.loads(json.dumps(what, default=str)) or not 0 <= age < MAX_AGE_S:
        return None
    return dict(kept["calibration"], kept_from={"run_id": kept.get("run_id"),
                                                "measured_at": kept.get("measured_at"),
                                                "age_s": round(age, 1)})


def keep(what: Mapping[str, Any], calibration: Mapping[str, Any], run_id: str) -> None:
    """Keep ``calibration`` (measured by ``run_id`` now) for later runs with the same
    ``what``; a folder that cannot be written keeps nothing (the next run measures again)."""
    from jitbench.results import meta

    path = _path(what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        meta.write(path.parent, {"facts": dict(what), "calibration": dict(calibration),
                                 "run_id": run_id, "kept_at": time.time(),
                                 "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
                   path.name)
    except OSError:
        pass
