"""The machine's side of ``jitbench doctor``: what it is doing, and the settings that change
numbers. Reads /proc, /sys and the GPU (``jitbench.protocol.gpu_state``, ``nvidia-smi``);
imports no framework."""

from __future__ import annotations

import os
import time
from pathlib import Path

from jitbench import launch
from jitbench.doctor import CUDA_INSTALL, Check
from jitbench.protocol import gpu_state
from jitbench.protocol import machine_load

THREAD_VARIABLES = ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                    "XLA_FLAGS", "TF_XLA_FLAGS", "JAX_DEFAULT_MATMUL_PRECISION",
                    "NVIDIA_TF32_OVERRIDE")
BUSY_PCT = 20.0  # CPU busy beyond this while nothing of ours runs: something else is working
STEAL_PCT = 5.0  # the hypervisor took this share of the CPU: a shared, noisy VM


def present_devices() -> list[str]:
    """The devices this machine has, as ``jitbench doctor`` checks them when not told:
    ``["cpu"]``, and ``"gpu"`` where a GPU can be read (NVML or nvidia-smi)."""
    return ["cpu"] + (["gpu"] if gpu_state.read() is not None else [])


def checks(devices: list[str], window_s: float = 1.0) -> list[Check]:
    """The machine's checks for ``devices`` (``["cpu"]``, ``["cpu", "gpu"]``)."""
    out = [_cpu_activity(window_s), _frequency_scaling(), _settings(), _pinning()]
    if "gpu" in devices:
        out += _gpu()
    return out


def devices_check(devices: list[str], asked: bool) -> Check:
    """Which devices were checked and why: the ones asked for, or the ones this machine has."""
    if asked:
        return Check("devices checked", "ok", f"{', '.join(devices)} (asked for)")
    if "gpu" in devices:
        return Check("devices checked", "ok", f"{', '.join(devices)}: the devices this "
                     "machine has")
    return Check("devices checked", "ok", "cpu: no GPU here (neither NVML nor nvidia-smi "
                 "answers); --device gpu checks one anyway")


def _cpu_activity(window_s: float) -> Check:
    before = machine_load.snapshot()
    time.sleep(window_s)
    now = machine_load.between(before, machine_load.snapshot())
    busy, steal, avg = now["cpu_busy_pct"], now["cpu_steal_pct"], now["loadavg_1m"]
    if busy is None:
        return Check("cpu load", "warn", "no /proc/stat here: load and steal unknown",
                     "benchmark on Linux to have them recorded")
    detail = (f"{busy:.0f}% busy, {steal:.1f}% steal over {window_s:g} s; load average "
              f"{avg:.2f} on {os.cpu_count()} CPUs")
    if steal > STEAL_PCT:
        return Check("cpu load", "warn", detail, "a shared VM: its neighbours move your "
                     "numbers; compare only ratios measured in one run, interleaved")
    if busy > BUSY_PCT:
        return Check("cpu load", "warn", detail, "something else is running: stop it, or "
                     "expect wider intervals and more unresolved verdicts")
    return Check("cpu load", "ok", detail)


def _frequency_scaling(root: Path = Path("/sys/devices/system/cpu")) -> Check:
    governors = sorted({p.read_text().strip() for p in
                        root.glob("cpu[0-9]*/cpufreq/scaling_governor") if p.is_file()})
    if not governors:
        return Check("cpu frequency scaling", "ok", "not readable here (a VM, or no cpufreq "
                     "driver): the host decides")
    detail = f"governor {', '.join(governors)}"
    if governors != ["performance"]:
        return Check("cpu frequency scaling", "warn", detail, "set the performance governor "
                     "(cpupower frequency-set -g performance) for steadier times")
    return Check("cpu frequency scaling", "ok", detail)


def _settings() -> Check:
    found = {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ}
    if not found:
        return Check("settings that change numbers", "ok",
                     "none set: each framework's defaults (all cores; TF32 on recent GPUs)")
    text = ", ".join(f"{k}={v}" for k, v in found.items())
    return Check("settings that change numbers", "ok", text + " (recorded in each run's "
                 "meta.json; they change what is measured)")


def _pinning() -> Check:
    if not hasattr(os, "sched_getaffinity"):
        return Check("cpu pinning", "ok", "not available on this system")
    mine, total = len(os.sched_getaffinity(0)), os.cpu_count() or 0
    if mine < total:
        return Check("cpu pinning", "ok", f"this process may use {mine} of {total} CPUs "
                     "(pinned): fresh processes land in steadier states, but the numbers are "
                     "for that many cores")
    return Check("cpu pinning", "ok", f"not pinned ({total} CPUs)")


def _gpu() -> list[Check]:
    first = gpu_state.read()
    if first is None:  # asked for, absent: the CPU can still be benchmarked
        return [Check("gpu state", "warn", "no GPU could be read (neither NVML nor "
                      "nvidia-smi): this machine has none, or its driver is not installed",
                      "on a machine with a GPU: its driver (nvidia-smi), then the CUDA "
                      f"builds: {CUDA_INSTALL}")]
    time.sleep(0.5)
    second = gpu_state.read() or first
    detail = (f"SM clock {second['sm_clock_mhz']:.0f} MHz, memory {second['mem_clock_mhz']:.0f} "
              f"MHz, {second['temperature_c']:.0f} C, {second['power_w'] or 0:.0f} W, "
              f"utilisation {second['utilization_pct']:.0f}%")
    slow = gpu_state.slowdowns(second.get("throttle_reasons"))
    out = [Check("gpu state", "warn" if slow else "ok",
                 detail + (f"; slowdown active: {', '.join(slow)}" if slow else ""),
                 "let it cool down or lift the power cap before measuring" if slow else "")]
    busy = second.get("utilization_pct") or 0
    apps = launch.tool(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                        "--format=csv,noheader"], 10)
    others = [ln.strip() for ln in (apps.stdout.splitlines() if apps else []) if ln.strip()]
    if others or busy > BUSY_PCT:
        out.append(Check("other work on the gpu", "warn",
                         f"{len(others)} other process(es): {'; '.join(others)[:300]}"
                         if others else f"utilisation {busy:.0f}% with nothing of ours running",
                         "stop them: they share the GPU's time and memory"))
    else:
        out.append(Check("other work on the gpu", "ok", "no other process on the GPU"))
    return out
