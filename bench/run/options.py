"""What a run was asked to do, as one object passed down through its session.

Each kind of run builds :class:`RunOptions` once (``jitbench run`` flags or ``runner.run``'s
keywords; an A/B's settings), checks it, and its session (``jitbench.run.session``) records it
in ``meta.json`` (:meth:`RunOptions.as_meta`) and hands it to whatever needs a setting: the
loop of workers (protocol, time limit), the workers' environment (compile cache), the capture
of HLO and profiles. Nothing reads a setting back from ``meta`` during a run; a resume rebuilds
the object from ``meta.json`` (:meth:`RunOptions.from_meta`), so a resumed run measures the way
it began.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping

from jitbench.errors import UserError, check_choice
from jitbench.frameworks import MATMUL_PRECISIONS, PRECISION_ENV
from jitbench.protocol.settings import BEFORE, Protocol
from jitbench.run.worker_start import CPU_AFFINITY_ENV

COMPILE_CACHE_CHOICES = ("off", "cold", "warm")  # jitbench.run.compile_cache says what each does
COMPILE_CACHE_ENV = "JITBENCH_COMPILE_CACHE"  # read by the adapters before the framework starts
COMPILE_CACHE_FOLDER = "compile-cache"  # under the run folder
# how each worker process is started: "default" as a user's process runs (every core, a random
# hash seed); "stable" pinned to one core with hash seed 0, which removed most of the scatter
# between fresh processes (docs/nightly.md, "Process profiles"): it detects a change in the
# compiled code, but a single core is not the user's multi-threaded program. glibc's allocator
# thresholds on top did not make nights quieter (docs/lab/nightly-allocator/index.md)
PROCESS_PROFILES = {
    "default": "every core, a random hash seed: as a user's process runs",
    "stable": "each worker pinned to one core, hash seed 0: little scatter between fresh "
              "processes; measures the program on one core, not a user's multi-threaded "
              "speedup",
}


def usable_cores() -> list[int]:
    """The cores this process may run on, lowest first."""
    import os

    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]


# how the two processes of an A/B's pair run (``jitbench.run.ab_arms``)
PAIRINGS = {
    "alternating": "arm A's fresh process, then arm B's, the order swapped every pair",
    "duet": "A and B at the same time, each pinned to a core of its own, the cores swapped "
            "every pair: both share the host's state of that moment (CPU cases; needs two "
            "cores)",
}


@dataclasses.dataclass(frozen=True)
class RunOptions:
    protocol: Protocol = Protocol()
    case_timeout: float = 1800.0  # seconds a group may take before its worker is killed
    calibrate: bool = False  # measure the machine's peak and dispatch floors first
    compile_cache: str = "off"  # off | cold | warm (jitbench.run.compile_cache)
    dump_hlo: bool = False  # keep each JIT mode's optimized HLO under <run>/cases/
    profile: bool = False  # keep a profiler trace of each mode under <run>/cases/
    # float32 matrix products: the framework's default (TF32 on recent GPUs) or "highest"
    matmul_precision: str = "default"
    process_profile: str = "default"  # a key of PROCESS_PROFILES
    # the core "stable" pins the workers to (None: the lowest this process may use)
    cpu_core: int | None = None

    def check(self) -> "RunOptions":
        t = self.case_timeout
        if not (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
                and t > 0):
            raise UserError(f"case timeout must be a finite number of seconds > 0, got {t!r}")
        check_choice("compile cache", self.compile_cache, COMPILE_CACHE_CHOICES)
        check_choice("matmul precision", self.matmul_precision, MATMUL_PRECISIONS)
        check_choice("process profile", self.process_profile, tuple(PROCESS_PROFILES))
        return self

    def as_meta(self, run_dir: Path) -> dict[str, Any]:
        """The options as a new run's ``meta.json`` records them (what ``--resume`` reads
        back, :meth:`from_meta`)."""
        out: dict[str, Any] = {"case_timeout_s": self.case_timeout,
                               "insight": {"dump_hlo": self.dump_hlo, "profile": self.profile},
                               "compile_cache": self.compile_cache, "calibrate": self.calibrate,
                               "matmul_precision": self.matmul_precision,
                               "process_profile": self.process_profile}
        if self.process_profile == "stable":
            env = self.profile_env()
            out["cpu_core"] = int(env[CPU_AFFINITY_ENV])
            # what the profile set, the core apart: nights of another setting are another
            # history (jitbench.nightly.runs.comparable)
            out["profile_env"] = {k: v for k, v in env.items() if k != CPU_AFFINITY_ENV}
        if self.compile_cache != "off":
            out["compile_cache_dir"] = str(self.cache_folder(run_dir).resolve())
        return out

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], case_timeout: float | None = None
                  ) -> "RunOptions":
        """The options a run recorded (unknown or damaged entries fall back to defaults);
        ``case_timeout`` overrides the recorded one."""
        known = {f.name for f in dataclasses.fields(Protocol)}
        recorded = meta.get("protocol") if isinstance(meta.get("protocol"), dict) else {}
        # a field the record lacks was added since it was written: measured as before it was
        protocol = Protocol(**{**(BEFORE if recorded else {}),
                               **{k: v for k, v in recorded.items() if k in known}})
        insight = meta.get("insight") if isinstance(meta.get("insight"), dict) else {}
        cache = meta.get("compile_cache")
        precision = meta.get("matmul_precision")
        profile = meta.get("process_profile")
        core = meta.get("cpu_core")
        if case_timeout is None:
            case_timeout = meta.get("case_timeout_s") or 1800.0
        return cls(protocol=protocol, case_timeout=case_timeout,
                   calibrate=bool(meta.get("calibrate")),
                   compile_cache=cache if cache in COMPILE_CACHE_CHOICES else "off",
                   dump_hlo=bool(insight.get("dump_hlo")), profile=bool(insight.get("profile")),
                   matmul_precision=precision if precision in MATMUL_PRECISIONS else "default",
                   process_profile=profile if profile in PROCESS_PROFILES else "default",
                   cpu_core=core if isinstance(core, int) and not isinstance(core, bool)
                   else None)

    @staticmethod
    def cache_folder(run_dir: Path) -> Path:
        return Path(run_dir) / COMPILE_CACHE_FOLDER

    def worker_env(self, run_dir: Path) -> dict[str, str]:
        """What every worker of the run gets in its environment for these options."""
        env = {PRECISION_ENV: self.matmul_precision} if self.matmul_precision != "default" \
            else {}
        if self.compile_cache != "off":
            env[COMPILE_CACHE_ENV] = str(self.cache_folder(run_dir).resolve())
        return {**env, **self.profile_env()}

    def profile_env(self) -> dict[str, str]:
        """The process profile's variables (the calibration's workers get them too)."""
        if self.process_profile != "stable":
            return {}
        core = self.cpu_core if self.cpu_core is not None else usable_cores()[0]
        return {"PYTHONHASHSEED": "0", CPU_AFFINITY_ENV: str(core)}

    def capture(self, run_dir: Path) -> dict[str, Any]:
        """The capture options the workers get (``jitbench.xla.capture``)."""
        return {"dump_hlo": self.dump_hlo, "profile": self.profile,
                "folder": str(Path(run_dir).resolve() / "cases")}
