"""The GPU's state while a group ran: clocks, temperature, power, utilisation, throttling.

A GPU number means little without the state it was taken in (TensorRT's measurement guide asks
for clocks, power and temperature beside every result; nvbench discards samples taken while
the GPU throttles). The worker reads the device it measures on before and after each group
(:func:`read`): through NVML (``nvidia-ml-py``, the ``cuda`` extra) where it is installed, else
``nvidia-smi``; nothing where neither is (a CPU machine). :func:`group_fields` turns the two
readings into row fields and flags a group during which the SM clock fell by more than
:data:`CLOCK_DROP` or the driver reported a slowdown (thermal, power, hardware).
"""

from __future__ import annotations

from typing import Any

from jitbench import launch

CLOCK_DROP = 0.10  # an SM clock this much lower at the end of a group than at its start
# nvidia-smi / NVML throttle-reason bits that slow the clocks below what the load asks for
# (idle and application-clock settings are not slowdowns): SW power cap, HW slowdown,
# SW thermal, HW thermal, HW power brake
SLOWDOWN_BITS = {0x4: "power cap", 0x8: "hardware slowdown", 0x20: "thermal (software)",
                 0x40: "thermal (hardware)", 0x80: "power brake"}
FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w", "utilization_pct",
          "throttle_reasons")
_QUERY = ("clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu,"
          "clocks_throttle_reasons.active")


def read(index: int = 0) -> dict[str, Any] | None:
    """One reading of GPU ``index``: the :data:`FIELDS` (``throttle_reasons`` a bitmask), or
    None where no GPU can be read."""
    return _read_nvml(index) or _read_smi(index)


def _read_nvml(index: int) -> dict[str, Any] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        return {"sm_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
                "mem_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)),
                "temperature_c": float(pynvml.nvmlDeviceGetTemperature(
                    h, pynvml.NVML_TEMPERATURE_GPU)),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "utilization_pct": float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu),
                "throttle_reasons": int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))}
    except Exception:  # noqa: BLE001 -- no readable GPU: the caller falls back
        return None


def _read_smi(index: int) -> dict[str, Any] | None:
    done = launch.tool(["nvidia-smi", f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits",
                        "-i", str(index)], 10)
    if done is None or done.returncode != 0 or not done.stdout.strip():
        return None
    return parse_smi(done.stdout.strip().splitlines()[0])


def parse_smi(line: str) -> dict[str, Any] | None:
    """One line of ``nvidia-smi --query-gpu=<_QUERY> --format=csv,noheader,nounits``:
    ``"1980, 3201, 41, 152.37, 12, 0x0000000000000000"``; a value it cannot give
    (``[N/A]``) is None."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(FIELDS):
        return None
    out: dict[str, Any] = {}
    for key, text in zip(FIELDS, parts):
        try:
            out[key] = int(text, 16) if key == "throttle_reasons" else float(text)
        except ValueError:
            out[key] = None
    return out


def slowdowns(reasons: int | None) -> list[str]:
    """The slowdown reasons a throttle bitmask names: ``slowdowns(0x20) == ["thermal
    (software)"]``."""
    return [name for bit, name in SLOWDOWN_BITS.items() if reasons and reasons & bit]


def group_fields(before: dict[str, Any] | None, after: dict[str, Any] | None
                 ) -> dict[str, Any]:
    """Row fields of a group from the readings before and after it: ``gpu_sm_clock_mhz_start``
    / ``_end``, ``gpu_mem_clock_mhz``, ``gpu_temperature_c_start`` / ``_end``,
    ``gpu_power_w``, ``gpu_utilization_pct``, and ``gpu_throttled`` with ``gpu_throttle_note``
    when the SM clock fell by more than :data:`CLOCK_DROP` or a slowdown was active at the
    end; ``{}`` without readings."""
    if not before or not after:
        return {}
    out = {"gpu_sm_clock_mhz_start": before.get("sm_clock_mhz"),
           "gpu_sm_clock_mhz_end": after.get("sm_clock_mhz"),
           "gpu_mem_clock_mhz": after.get("mem_clock_mhz"),
           "gpu_temperature_c_start": before.get("temperature_c"),
           "gpu_temperature_c_end": after.get("temperature_c"),
           "gpu_power_w": after.get("power_w"), "gpu_utilization_pct": after.get("utilization_pct")}
    notes = []
    start, end = before.get("sm_clock_mhz"), after.get("sm_clock_mhz")
    if start and end and end < (1.0 - CLOCK_DROP) * start:
        notes.append(f"SM clock fell from {start:.0f} to {end:.0f} MHz")
    reasons = slowdowns(after.get("throttle_reasons"))
    if reasons:
        notes.append("slowdown active: " + ", ".join(reasons))
    out["gpu_throttled"] = bool(notes)
    if notes:
        out["gpu_throttle_note"] = "; ".join(notes)
    return out
