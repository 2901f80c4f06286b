"""Device memory per mode (jitbench.run.worker._peak_memory): a framework that can restart its
peak (TensorFlow on a GPU) gets each mode's own peak and what it added; one that cannot (JAX)
gets the process's high-water mark, never passed off as a mode's. Fake adapters: the memory
counters are the only thing faked."""

from __future__ import annotations

import pytest

from jitbench.protocol.samples import ModeResult, Timed
from jitbench.run.worker import _peak_memory

pytestmark = pytest.mark.unit  # no child process, no framework import


class Device:
    """A device whose modes each allocate some bytes for one call, over inputs already there."""

    def __init__(self, resets: bool, inputs: int = 1000):
        self.resets, self.in_use, self.peak = resets, inputs, inputs

    def allocate(self, n):
        self.peak = max(self.peak, self.in_use + n)

    def reset_peak_memory(self, device):
        if not self.resets:
            return None
        self.peak = self.in_use
        return self.in_use

    def peak_memory_bytes(self, device):
        return self.peak


def modes(dev, sizes):
    return [Timed(name, lambda n=n: dev.allocate(n), lambda out: None)
            for name, n in sizes.items()]


def test_a_framework_that_restarts_its_peak_gets_each_modes_own():
    dev = Device(resets=True)
    timed = modes(dev, {"graph": 5000, "xla": 200})  # the hungrier mode first
    per_mode, process = _peak_memory(dev, timed, {t.name: ModeResult(t.name) for t in timed},
                                     "gpu")
    assert process == {}
    assert per_mode["graph"] == {"peak_mem_bytes": 6000, "peak_mem_added_bytes": 5000}
    assert per_mode["xla"] == {"peak_mem_bytes": 1200, "peak_mem_added_bytes": 200}


def test_a_framework_whose_peak_never_resets_reports_the_process_peak_only():
    dev = Device(resets=False)
    dev.allocate(150_000_000)  # an earlier group (the calibration's leftovers)
    timed = modes(dev, {"eager": 5000, "jit": 200})
    per_mode, process = _peak_memory(dev, timed, {t.name: ModeResult(t.name) for t in timed},
                                     "gpu")
    assert per_mode == {} and process == {"process_peak_mem_bytes": 150_001_000}


def test_no_statistics_on_a_cpu_means_no_extra_call():
    class Cpu(Device):
        def peak_memory_bytes(self, device):
            return None

    calls = []
    timed = [Timed("eager", lambda: calls.append(1), lambda out: None)]
    assert _peak_memory(Cpu(resets=True), timed, {"eager": ModeResult("eager")}, "cpu") \
        == ({}, {})
    assert not calls
