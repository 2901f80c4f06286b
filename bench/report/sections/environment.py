"""The machine, the frameworks, the flags and the command of the run, and its meta.json."""

from __future__ import annotations

import json
import shlex
from typing import Any

from jitbench.define.modes import MODES
from jitbench.report.sections import Section, register


def _environment(meta: dict[str, Any]) -> list[tuple[str, str]]:
    m = meta.get("machine") or {}
    env: list[tuple[str, str]] = []
    if m:
        cores = f"{m.get('cpu_count', '–')} cores"
        if m.get("cpu_affinity") and m.get("cpu_affinity") != m.get("cpu_count"):
            cores += f" ({m['cpu_affinity']} usable)"
        env.append(("machine", (f"{m.get('cpu_model', '–')}, {cores}, "
                                f"{m.get('memory_gb', '–')} GB RAM; {m.get('platform', '')}; "
                                f"host {m.get('hostname', '–')}")))
        env.append(("python", str(m.get("python", "–"))))
        for g in m.get("gpus") or []:
            env.append(("GPU", ", ".join(f"{k} {v}" for k, v in g.items())))
    devices = meta.get("devices") or []
    if devices:
        env.append(("devices", ", ".join(
            f"{d.get('framework')}: {d.get('name')}" + (f" ({d['kind']})" if d.get("kind")
                                                         else "") for d in devices)))
    if meta.get("frameworks"):
        env.append(("versions", ", ".join(f"{k} {v}" for k, v in meta["frameworks"].items())))
    flags = meta.get("env") or {}
    env.append(("flags (environment)", ", ".join(f"{k}={v}" for k, v in flags.items())
                or "none set"))
    for mode in MODES.values():  # what a mode sets for its own worker (TF auto-clustering)
        label = mode.label.replace("\n", "")
        env.extend((f"{label} flags", f"{k} set in its own worker: {v}")
                   for k, v in mode.env.items())
    env.append(("git commit", str(meta.get("git_commit") or "–")))
    env.append(("command", " ".join(shlex.quote(str(c)) for c in meta.get("command") or [])
                or "–"))
    env.append(("run", f"{meta.get('run_id', '–')}: started {meta.get('started_at') or '–'}, "
                       f"finished {meta.get('finished_at') or '–'} "
                       f"({meta.get('status') or '–'}"
                + (f", {meta['elapsed_s']:.0f} s" if isinstance(meta.get("elapsed_s"),
                                                               (int, float)) else "") + ")"))
    proto = meta.get("protocol") or {}
    if proto:
        env.append(("protocol", ", ".join(f"{k}={v}" for k, v in proto.items())))
    return env


def _data(run, images) -> dict[str, Any]:
    return {"environment": _environment(run.meta),
            "meta_json": json.dumps(run.meta, indent=2, default=str)}


register(Section(name="environment", title="Environment", order=50, data=_data))
