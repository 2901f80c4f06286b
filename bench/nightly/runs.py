"""The run folders a nightly history is made of: which runs are under a results root, oldest
first (:func:`run_dirs`), and which of them were measured the way the latest was, so that they
can be compared with it (:func:`comparable`). Read by the nightly (``jitbench.nightly.night``)
and by the detectors' evaluation (``jitbench.nightly.evaluate``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jitbench.results.files import load_meta


def run_dirs(results_root: Path | str) -> list[Path]:
    """Runs under ``results_root``, oldest first (by start time in meta.json)."""
    root = Path(results_root)
    runs = [d for d in root.iterdir() if (d / "results.jsonl").is_file()] \
        if root.is_dir() else []
    return sorted(runs, key=lambda d: (load_meta(d).get("started_at") or "", d.name))


def comparable(metas: dict[str, dict[str, Any]], order: list[str]) -> list[str]:
    """The runs of ``order`` measured under the same protocol as the latest (``meta["protocol"]``)
    and the same process profile. A new jitbench that measures differently (e.g. 5 untimed calls
    after a switch of mode instead of 1, which moved TF mmd's xla/graph ratio by +27%) starts a new
    history: judged against the old protocol's runs, the first night after the upgrade "confirmed"
    that change as two regressions."""
    def measuring(meta):  # the process profile too: pinned nights are another series, and
        # so are nights of another setting of it (``profile_env``; a stable night that does
        # not record it set the hash seed alone)
        profile = meta.get("process_profile") or "default"
        env = meta.get("profile_env") or ({"PYTHONHASHSEED": "0"} if profile == "stable"
                                          else {})
        return (_measuring(meta.get("protocol"), "gpu" in (meta.get("devices_measured") or ())),
                profile, sorted(env.items()))

    latest = measuring(metas[order[-1]])
    return [r for r in order if measuring(metas[r]) == latest]


# protocol fields a run recorded before they existed: the value that measures as it did
_BEFORE = {"precision": None, "budget": None, "tolerance": None, "confidence": None,
           "build_sigma": None, "block_time": None, "sample_min_time": None,
           "gpu_sample_min_time": None, "pipeline_time": None,
           "min_block_time": None,
           "stop_when": "verdict"}
# fields that only govern what comes after the timed samples (the synced calls, the
# interference check)
_AFTER_SAMPLES = ("interference_check", "alone_samples", "alone_max_time",
                  "interference_tolerance", "interference_z", "synced_time",
                  "synced_min_rounds", "synced_max_rounds")


def _measuring(protocol: Any, gpu: bool = False) -> Any:
    """What of a recorded protocol decides the timed samples: defaults of later fields filled
    in as the older runs measured, the switch-call default resolved, and the interference
    check's and the synced calls' settings left out (they run after the samples); the GPU's
    sample length only for a run that measured on a GPU (``gpu``: its meta's
    ``devices_measured``; a run that does not say is taken for a CPU run)."""
    if not isinstance(protocol, dict):
        return protocol
    out = {**_BEFORE, **protocol}
    if not gpu:
        out.pop("gpu_sample_min_time", None)
    if out.get("precision") is None:  # the fixed protocol ignores the sequential settings
        out.update({k: None for k in _BEFORE})
    if out.get("switch_calls") is None:
        out["switch_calls"] = 5 if out.get("precision") is None else 1
    if out.get("precision") is not None:  # sequential stopping never reads min_time
        out.pop("min_time", None)
    return {k: v for k, v in out.items() if k not in _AFTER_SAMPLES}
