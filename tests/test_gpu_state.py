"""The GPU's state per group (bench.protocol.gpu_state): nvidia-smi's line parsed, a clock that
fell or a slowdown flagged, nothing without readings. No GPU needed: readings are data."""

from __future__ import annotations

import pytest

from jitbench.protocol.gpu_state import group_fields, parse_smi, slowdowns

pytestmark = pytest.mark.unit


def test_an_nvidia_smi_line_reads_as_numbers():
    r = parse_smi("1980, 3201, 41, 152.37, 12, 0x0000000000000000")
    assert r == {"sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0, "temperature_c": 41.0,
                 "power_w": 152.37, "utilization_pct": 12.0, "throttle_reasons": 0}
    assert parse_smi("1980, 3201, 41, [N/A], 12, 0x0")["power_w"] is None
    assert parse_smi("not, a, line") is None


def test_a_steady_group_is_not_flagged():
    before = parse_smi("1980, 3201, 40, 120.0, 5, 0x0")
    after = parse_smi("1965, 3201, 44, 300.0, 90, 0x0")
    f = group_fields(before, after)
    assert f["gpu_throttled"] is False and "gpu_throttle_note" not in f
    assert (f["gpu_sm_clock_mhz_start"], f["gpu_sm_clock_mhz_end"]) == (1980.0, 1965.0)


@pytest.mark.parametrize("after, said", [
    ("1700, 3201, 83, 690.0, 99, 0x0", "SM clock fell from 1980 to 1700 MHz"),
    ("1980, 3201, 88, 700.0, 99, 0x20", "slowdown active: thermal (software)"),
    ("1980, 3201, 60, 700.0, 99, 0x4", "slowdown active: power cap"),
])
def test_a_clock_that_fell_or_a_slowdown_flags_the_group(after, said):
    f = group_fields(parse_smi("1980, 3201, 40, 120.0, 5, 0x0"), parse_smi(after))
    assert f["gpu_throttled"] is True and said in f["gpu_throttle_note"]


def test_idle_and_application_clock_reasons_are_not_slowdowns():
    assert slowdowns(0x1) == [] and slowdowns(0x2) == [] and slowdowns(None) == []
    assert slowdowns(0x8 | 0x40) == ["hardware slowdown", "thermal (hardware)"]


def test_no_reading_no_fields():
    assert group_fields(None, None) == {} and group_fields(parse_smi("1, 2, 3, 4, 5, 0x0"),
                                                           None) == {}
