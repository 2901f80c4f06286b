"""The process profiles a run or a night starts its workers in (``--process-profile``): what
each sets, that a resumed run keeps it, and that nights of two profiles are two histories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitbench.errors import UserError
from jitbench.nightly.summary import profile_facts
from jitbench.nightly.runs import comparable
from jitbench.run.worker_start import CPU_AFFINITY_ENV
from jitbench.run.options import RunOptions

pytestmark = pytest.mark.unit


def test_the_default_profile_adds_nothing_and_stable_pins_and_seeds(tmp_path):
    assert RunOptions().worker_env(tmp_path) == {}
    env = RunOptions(process_profile="stable").worker_env(tmp_path)
    assert env == {"PYTHONHASHSEED": "0",
                   CPU_AFFINITY_ENV: str(min(os.sched_getaffinity(0)))}


def test_a_resumed_run_keeps_its_profile_and_a_bad_one_is_named(tmp_path):
    options = RunOptions(process_profile="stable").check()
    assert RunOptions.from_meta(options.as_meta(tmp_path)).process_profile == "stable"
    assert RunOptions.from_meta({}).process_profile == "default"
    with pytest.raises(UserError, match="'quiet'.*default, stable"):
        RunOptions(process_profile="quiet").check()


def test_nights_of_another_profile_are_not_compared():
    protocol = {"precision": 0.03}
    metas = {"n1": {"protocol": protocol}, "n2": {"protocol": protocol},
             "n3": {"protocol": protocol, "process_profile": "stable"},
             "n4": {"protocol": protocol, "process_profile": "stable"}}
    assert comparable(metas, ["n1", "n2", "n3", "n4"]) == ["n3", "n4"]
    assert comparable(metas, ["n1", "n2"]) == ["n1", "n2"]
    # a stable night that records its variables joins the stable nights that did not (they
    # set the hash seed alone); a night of another setting of the profile does not
    today = dict(metas["n4"], profile_env=RunOptions(process_profile="stable").as_meta(
        Path("."))["profile_env"])
    other = dict(metas["n4"], profile_env={"PYTHONHASHSEED": "0", "MALLOC_ARENA_MAX": "1"})
    metas.update(n5=today, n6=other)
    assert comparable(metas, ["n3", "n4", "n5"]) == ["n3", "n4", "n5"]
    assert comparable(metas, ["n3", "n4", "n5", "n6"]) == ["n6"]


def test_a_night_says_what_the_stable_profile_measures():
    assert profile_facts({}) == {"process_profile": "default", "profile_note": None}
    facts = profile_facts({"process_profile": "stable"})
    assert "one core" in facts["profile_note"] and "multi-threaded" in facts["profile_note"]


def test_a_run_can_pin_its_workers_to_a_core_of_its_choosing_and_resumes_on_it(tmp_path):
    options = RunOptions(process_profile="stable", cpu_core=5).check()
    assert options.worker_env(tmp_path)[CPU_AFFINITY_ENV] == "5"
    meta = options.as_meta(tmp_path)
    assert meta["cpu_core"] == 5 and RunOptions.from_meta(meta).cpu_core == 5
    assert "cpu_core" not in RunOptions().as_meta(tmp_path)  # unpinned: no core to name


def test_a_cpu_night_is_pinned_by_default_a_gpu_night_is_not():
    from jitbench.cli.args import night_profile
    from jitbench.define.workload import Filters, expand

    cpu = expand(Filters(suite=("matmul_relu",), device=("cpu",)))
    gpu = expand(Filters(suite=("matmul_relu",), device=("cpu", "gpu")))
    assert night_profile("auto", cpu) == "stable"
    assert night_profile("auto", gpu, gpu_present=True) == "default"
    # the GPU cases of a night on a machine without a GPU are skipped: they do not count
    assert night_profile("auto", gpu, gpu_present=False) == "stable"
    assert night_profile("default", cpu) == "default"
    assert night_profile("auto", []) is None  # --no-run: the latest night's own profile


def test_auto_asks_the_machine_whether_a_gpu_case_will_run(monkeypatch):
    from jitbench.cli.args import night_profile
    from jitbench.define.workload import Filters, expand
    from jitbench.results import meta

    both = expand(Filters(suite=("matmul_relu",)))  # no --device: cpu and gpu cases
    monkeypatch.setattr(meta, "gpus", lambda: [])
    assert night_profile("auto", both) == "stable"
    monkeypatch.setattr(meta, "gpus", lambda: [{"name": "NVIDIA H100", "driver_version": "1"}])
    assert night_profile("auto", both) == "default"
