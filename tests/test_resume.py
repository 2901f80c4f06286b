"""Stopping a run (Ctrl-C, SIGTERM, or a kill -9 of the runner) keeps every completed row;
``jitbench run --resume RUN_DIR`` then measures exactly the cases that have none, so the run
ends with the case list of a clean run, each case once. Real processes, the tiny JAX workload
(six case groups)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitbench.errors import DataWarning
from jitbench.results.run_folder import pending_cases

TINY = str(Path(__file__).parent / "workloads" / "tiny.py")
# the two JAX modes this was written for (JIT off, JIT on); aot would add a third per group
ARGS = ["--suite-file", TINY, "--suite", "tiny", "--framework", "jax", "--mode", "eager,jit",
        "--device", "cpu"]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}


def clean_case_list() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "jitbench", "list", *ARGS], capture_output=True,
                         text=True, check=True, env=ENV)
    return out.stdout.splitlines()[:-1]


def start(out: Path, run_id: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jitbench", "run", *ARGS, "--min-time", "0.05",
                             "--out", str(out), "--run-id", run_id, "--no-report",
                             "--no-calibrate"],  # calibration: tests/test_calibration.py
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def wait_for_rows(results: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if results.exists():
            got = results.read_text().count("\n")
            if got >= n:
                return got
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} rows after {timeout} s")


def resume(run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jitbench", "run", "--resume", str(run_dir),
                           "--no-report"], capture_output=True, text=True, timeout=300,
                          env=ENV)


def case_ids(run_dir: Path) -> list[str]:
    return [json.loads(line)["case_id"]
            for line in (run_dir / "results.jsonl").read_text().splitlines()]


def meta(run_dir: Path) -> dict:
    return json.loads((run_dir / "meta.json").read_text())


def workers_of(run_dir: Path) -> list[int]:
    """Worker processes still alive that write into this run's logs."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if "jitbench.run.worker" in line and str(run_dir) in line]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_midway_then_resume_gives_the_clean_case_list(tmp_path, sig, code):
    proc = start(tmp_path, "r")
    run_dir = tmp_path / "r"
    before = wait_for_rows(run_dir / "results.jsonl", 4, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    name = signal.Signals(sig).name
    assert f"jitbench: interrupted ({name});" in err
    assert f"continue with: jitbench run --resume {run_dir}" in err
    assert "Traceback" not in err
    kept = case_ids(run_dir)
    assert before <= len(kept) < 12 and len(set(kept)) == len(kept)
    m = meta(run_dir)
    assert m["status"] == "interrupted" and m["interrupted_by"] == name
    assert m["n_recorded"] == len(kept)
    assert not workers_of(run_dir)

    done = resume(run_dir)
    assert done.returncode == 0, done.stderr
    assert f"resuming {run_dir}: {12 - len(kept)} of 12 cases have no row yet" in done.stderr
    ids = case_ids(run_dir)
    assert ids[:len(kept)] == kept  # appended, nothing rewritten
    assert sorted(ids) == sorted(clean_case_list())  # every case once
    m = meta(run_dir)
    assert m["status"] == "complete" and "interrupted_by" not in m
    assert m["n_recorded"] == 12 and m["resumes"][0]["n_cases"] == 12 - len(kept)
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" and r["run_id"] == "r" for r in rows)

    again = resume(run_dir)  # nothing left: says so, changes nothing
    assert again.returncode == 0 and "nothing to resume" in again.stderr
    assert case_ids(run_dir) == ids


def test_a_killed_runner_takes_its_workers_along_and_its_run_resumes(tmp_path):
    proc = start(tmp_path, "k")
    run_dir = tmp_path / "k"
    wait_for_rows(run_dir / "results.jsonl", 2, proc)
    proc.kill()  # SIGKILL: no handler runs, meta.json still says "running"
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while workers_of(run_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers_of(run_dir)  # PR_SET_PDEATHSIG: the worker died with its runner
    assert meta(run_dir)["status"] == "running"
    with open(run_dir / "results.jsonl", "a") as fh:  # as if killed in the middle of a row
        fh.write('{"schema_version": 1, "case_id": "tiny-default-jax-eager-cpu-float32-n1')
    with pytest.warns(DataWarning, match="truncated last line skipped"):
        cases, pending = pending_cases(run_dir)
    assert len(cases) == 12 and 0 < len(pending) < 12

    done = resume(run_dir)
    assert done.returncode == 0, done.stderr
    assert "dropped a truncated last line" in done.stderr
    assert sorted(case_ids(run_dir)) == sorted(clean_case_list())
    assert meta(run_dir)["status"] == "complete"
