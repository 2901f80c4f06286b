"""``jitbench doctor`` without ``--device`` checks the devices this machine has; a GPU asked for
on a machine without one is a warning that names the CUDA extra, and the terminal table shows
that command as written (issue 64, item 4)."""

from __future__ import annotations

import argparse
import io

import pytest

from jitbench.doctor import CUDA_INSTALL, Check, machine, tiny, worst

pytestmark = pytest.mark.unit


def _no_gpu(monkeypatch):
    monkeypatch.setattr(machine.gpu_state, "read", lambda index=0: None)


def _a_gpu(monkeypatch):
    reading = {"sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0, "temperature_c": 40.0,
               "power_w": 80.0, "utilization_pct": 0.0, "throttle_reasons": 0}
    monkeypatch.setattr(machine.gpu_state, "read", lambda index=0: reading)


def test_without_an_option_the_devices_are_the_machines(monkeypatch):
    _no_gpu(monkeypatch)
    assert machine.present_devices() == ["cpu"]
    said = machine.devices_check(["cpu"], asked=False)
    assert said.verdict == "ok" and "no GPU here" in said.detail and "--device gpu" in said.detail
    _a_gpu(monkeypatch)
    assert machine.present_devices() == ["cpu", "gpu"]


def test_a_gpu_asked_for_and_absent_is_a_warning_with_the_cuda_extra(monkeypatch):
    _no_gpu(monkeypatch)
    gpu = [c for c in machine.checks(["cpu", "gpu"], window_s=0.05) if c.name == "gpu state"]
    assert len(gpu) == 1 and gpu[0].verdict == "warn"
    assert ".[cuda]" in gpu[0].advice and 'jitbench[cuda]' in gpu[0].advice
    skipped = [{"mode": m, "status": "skipped", "error": "JAX sees no gpu device"}
               for m in ("eager", "jit", "aot")]
    absent = tiny._group_checks("jax", "gpu", skipped, lambda n: [], gpu_here=False)
    assert [c.verdict for c in absent] == ["warn"] and CUDA_INSTALL in absent[0].advice
    assert worst(absent + gpu) == "warn"  # exit 0: the CPU is fit to benchmark


def test_a_gpu_the_framework_does_not_see_on_a_machine_with_one_fails():
    skipped = [{"mode": "xla", "status": "skipped", "error": "TensorFlow sees no gpu device"}]
    unseen = tiny._group_checks("tf", "gpu", skipped, lambda n: [], gpu_here=True)
    assert [c.verdict for c in unseen] == ["fail"] and CUDA_INSTALL in unseen[0].advice


def test_the_table_shows_the_install_command_as_written(monkeypatch, capsys):
    from jitbench.cli import doctor as doctor_cli

    doctor_cli._table([Check("gpu state", "warn", "no GPU [here]", CUDA_INSTALL)], "warn", 1.0)
    out = capsys.readouterr().out  # rich took "[cuda]" for a style tag and printed '.'
    assert "pip install -e '.[cuda]'" in out and '"jitbench[cuda]"' in out, out
    assert "no GPU [here]" in out


def test_the_cli_checks_the_machines_devices_when_not_told(monkeypatch, tmp_path):
    """The command's own path, tiny runs stubbed: no --device on a CPU-only machine checks the
    CPU alone and exits 0 on ok checks."""
    from jitbench.cli import doctor as doctor_cli

    _no_gpu(monkeypatch)
    asked = {}

    def fake_tiny(devices, out_root):
        asked["devices"] = devices
        return [Check("jax on cpu: answers", "ok", "fine")], None

    monkeypatch.setattr(tiny, "checks", fake_tiny)
    monkeypatch.setattr(machine, "_cpu_activity", lambda window_s: Check("cpu load", "ok", "idle"))
    args = argparse.Namespace(device=None, json=True, keep=str(tmp_path))
    assert doctor_cli.cmd(args) == 0
    assert asked["devices"] == ["cpu"]
    args = argparse.Namespace(device="cpu,gpu", json=True, keep=str(tmp_path))
    assert doctor_cli.cmd(args) == 0  # the absent GPU is a warning
    assert asked["devices"] == ["cpu", "gpu"]
