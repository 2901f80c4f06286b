"""``jitbench doctor``: a verdict per check, from a tiny real run on the CPU and the machine's
own state; bad input named with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitbench.doctor import Check, worst
from jitbench.doctor.machine import _frequency_scaling
from jitbench.doctor.tiny import SYNC_RUNS, confirmed_sync_check, sync_check

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.e2e  # the whole `jitbench doctor` as a user runs it, in a process of its own
def test_doctor_on_the_cpu_gives_a_verdict_per_check_within_two_minutes(tmp_path):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "jitbench", "doctor", "--device", "cpu",
                           "--json", "--keep", str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert time.monotonic() - started < 120
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert all(c["verdict"] in ("ok", "warn", "fail") for c in checks.values())
    assert report["verdict"] in ("ok", "warn"), report
    for fw in ("tf", "jax"):
        assert checks[f"{fw} on cpu: answers"]["verdict"] == "ok", report
        assert "float32" in checks[f"{fw} on cpu: answers"]["detail"], report
        assert checks[f"{fw} on cpu: sync"]["verdict"] == "ok", report
    assert checks["jax on cpu: memory per mode"]["verdict"] == "ok", report
    assert "cpu load" in checks and "settings that change numbers" in checks
    rows = (tmp_path / "doctor" / "results.jsonl").read_text().splitlines()
    assert len(rows) == 7  # tf: 4 modes, jax: 3, of the smallest fused matmul+relu


def test_an_unknown_device_is_named_with_exit_2():
    done = subprocess.run([sys.executable, "-m", "jitbench", "doctor", "--device", "tpu"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "unknown device 'tpu'; valid: cpu, gpu" in done.stderr


def _row(mode, synced, pipelined=3.2e-4):
    return {"mode": mode, "synced_median_s": synced, "median_s": pipelined}


@pytest.mark.unit
def test_a_synced_call_far_faster_than_a_pipelined_one_fails_the_sync_check():
    """Measured apart in time, a working sync can read somewhat faster on a busy host (0.74x
    once under `make test`); a sync that waits for nothing reads dispatch only."""
    assert sync_check("jax on cpu", [[_row("eager", 2.4e-4)]]).verdict == "ok"
    bad = sync_check("jax on cpu", [[_row("eager", 2e-5)]])
    assert bad.verdict == "fail" and "eager: synced 2e-05 s < pipelined 0.00032 s" in bad.detail


@pytest.mark.unit
def test_a_fast_synced_call_is_measured_again_in_fresh_runs_before_the_sync_check_fails():
    """A burst of load during one run's pipelined phase (CI once read a working sync at 0.47x
    of its pipelined call) is cleared by a fresh run; a sync that waits for nothing reads fast
    in every run, and the check stops at SYNC_RUNS runs."""
    asked = []

    def again(reads):
        def run(n):
            asked.append(n)
            return [_row("eager", reads[n - 2]), _row("jit", 1e-4, 5e-5)]
        return run

    burst = confirmed_sync_check("jax on cpu", [_row("eager", 3.5e-4, 7.38e-4)],
                                 again([3.3e-4]))
    assert asked == [2] and burst.verdict == "ok"
    assert "run 2 of 2; run 1 read eager: synced 0.00035 s < pipelined 0.000738 s" in burst.detail

    asked.clear()
    broken = confirmed_sync_check("jax on cpu", [_row("eager", 2e-5)], again([2e-5, 3e-5, 1e-5]))
    assert asked == [2, 3] and len(asked) == SYNC_RUNS - 1
    assert broken.verdict == "fail" and broken.detail.endswith("(in 3 of 3 runs)")
    assert "eager: synced 3e-05 s" in broken.detail

    asked.clear()
    crashed = confirmed_sync_check("jax on cpu", [_row("eager", 2e-5)],
                                   lambda n: asked.append(n) or [{"mode": "eager"}])
    assert asked == [2, 3] and crashed.verdict == "fail"
    assert crashed.detail.endswith("eager: synced 2e-05 s < pipelined 0.00032 s (in 1 of 3 runs)")

    asked.clear()
    fine = confirmed_sync_check("jax on cpu", [_row("eager", 3e-4)], again([]))
    assert asked == [] and fine.detail == (
        "each call synced takes about as long as a pipelined one or longer")


@pytest.mark.unit
def test_the_worst_verdict_decides_and_a_bad_verdict_is_refused():
    assert worst([Check("a", "ok", ""), Check("b", "warn", "")]) == "warn"
    assert worst([Check("a", "fail", ""), Check("b", "warn", "")]) == "fail"
    assert worst([]) == "ok"
    with pytest.raises(ValueError, match="valid: ok, warn, fail"):
        Check("a", "fine", "")


@pytest.mark.unit
def test_a_governor_other_than_performance_is_a_warning(tmp_path):
    for i, gov in enumerate(("powersave", "performance")):
        path = tmp_path / f"cpu{i}" / "cpufreq" / "scaling_governor"
        path.parent.mkdir(parents=True)
        path.write_text(gov + "\n")
    c = _frequency_scaling(tmp_path)
    assert c.verdict == "warn" and "performance, powersave" in c.detail
    assert _frequency_scaling(tmp_path / "nothing").verdict == "ok"
