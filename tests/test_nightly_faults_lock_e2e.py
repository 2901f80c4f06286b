"""What a CI does to a night (issue 63), end to end with real nights of the small JAX workload:
two nights started together on one results folder (one runs, the other refuses, exit 4,
naming it), and the recipe's driver (``--environments``) stopped by SIGTERM while its night
measures: the lock it passed down keeps a second night out, the signal reaches the night,
which stops its workers and keeps its rows, and nothing is left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from jitbench.nightly.lock import LOCKED_EXIT
from test_nightly_faults_lock import _alive  # tests/: one helper for both files
from jitbench.nightly.runs import run_dirs

WORKLOAD = Path(__file__).parent / "workloads" / "nightly_small.py"
TINY = ["--suite-file", str(WORKLOAD), "--suite", "nightly_small", "--framework", "jax",
        "--mode", "jit", "--device", "cpu", "--size", "quick", "--precision", "off",
        "--max-processes", "1", "--no-recheck"]
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONWARNINGS",
                                                        "JITBENCH_TEST_SLOWDOWN")}


def _start(*words: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jitbench", "nightly", *words],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**ENV, **(env or {})})


def _processes() -> dict[int, tuple[int, str]]:
    """Every process: its parent and its whole command line (-ww: ps cuts it to $COLUMNS
    otherwise)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for line in out.splitlines():
        pid, ppid, *args = line.split(None, 2)
        table[int(pid)] = (int(ppid), args[0] if args else "")
    return table


def test_two_nights_started_together_one_runs_the_other_refuses(tmp_path):
    words = ["--results", str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
             *TINY, "--min-time", "0.1"]
    nights = [_start(*words), _start(*words)]
    ended = [(p.pid, *p.communicate(timeout=300), p.returncode) for p in nights]
    codes = sorted(code for *_, code in ended)
    assert codes == [0, LOCKED_EXIT], ended
    ran = next(e for e in ended if e[-1] == 0)
    refused = next(e for e in ended if e[-1] == LOCKED_EXIT)
    err = refused[2]
    assert f"another night holds {tmp_path / 'results'}: pid {ran[0]} on " in err, err
    assert "jitbench nightly --results" in err and "nothing was run" in err
    assert "Traceback" not in err and refused[1] == ""
    assert len(run_dirs(tmp_path / "results")) == 1  # one night, the one that ran


def _layered_environment(env_dir: Path) -> None:
    """A virtual environment over the test environment's packages (tests/test_nightly_recipe.py
    does the same): the recipe's night runs in it without a pip install."""
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    (own,) = (env_dir / "lib").glob("python3*/site-packages")
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages())
    (own / "zz_test_environment.pth").write_text(lines)


def test_sigterm_to_the_recipes_driver_stops_its_night_cleanly(tmp_path):
    _layered_environment(tmp_path / "envs" / "a")
    results = tmp_path / "results"
    driver = _start("--environments", str(tmp_path / "envs"), "--results", str(results),
                    "--reports", str(tmp_path / "reports"), *TINY, "--min-time", "1",
                    # every call 0.2 s: a night of about 15 s, stopped within its first seconds
                    env={"JITBENCH_TEST_SLOWDOWN": "*=0.2"})
    deadline = time.monotonic() + 120
    while True:  # the night measuring, in a worker of the night in envs/a
        table = _processes()
        night = [pid for pid, (ppid, _) in table.items() if ppid == driver.pid]
        workers = [pid for pid, (ppid, args) in table.items()
                   if ppid in night and "jitbench.run.worker" in args]
        if night and workers:
            break
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "no worker measuring after 120 s"
        time.sleep(0.2)
    (child,) = night
    assert str(tmp_path / "envs" / "a" / "bin" / "python") in table[child][1]

    second = _start("--results", str(results), "--reports", str(tmp_path / "reports2"),
                    *TINY, "--min-time", "0.1")
    out, err = second.communicate(timeout=120)
    assert second.returncode == LOCKED_EXIT, out + err
    assert f"pid {driver.pid} on " in err and "--environments" in err, err

    time.sleep(1.0)  # some rows measured
    driver.send_signal(signal.SIGTERM)
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 128 + signal.SIGTERM, out + err
    assert "jitbench: interrupted (SIGTERM)" in err and "rows kept in" in err, err
    assert "Traceback" not in err
    assert not _alive(child)
    assert not any(_alive(pid) for pid in workers)
    (night_dir,) = run_dirs(results)
    meta = json.loads((night_dir / "meta.json").read_text())  # the night's own clean stop
    assert meta["status"] == "interrupted" and meta["interrupted_by"] == "SIGTERM", meta
