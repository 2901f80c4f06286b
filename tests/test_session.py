"""A run's session from its birth: ``Session.create`` makes the folder and the record once,
``Session.resume`` opens a run of its own kind only (naming the command for another kind),
``Session.running`` writes rows and finishes the record, and every loop of workers it makes is
guarded while a worker starts and logs where ``jitbench.results.run_folder`` names it. No
worker is started: the tiny workload's cases, as data (not the unit tier: a new record asks
git and the system what it runs on, in child processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitbench.define.workload import Filters, expand
from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol
from jitbench.results import run_folder
from jitbench.run.groups import worker_key
from jitbench.run.options import RunOptions
from jitbench.run.session import Session
from jitbench.run.worker_warmup import ENV as WARMUP_ENV

TINY = str(Path(__file__).parent / "workloads" / "tiny.py")
OPTIONS = RunOptions(protocol=Protocol(), case_timeout=60.0).check()


def _cases():
    return expand(Filters(suite=("tiny",), framework=("jax",), mode=("eager", "jit"),
                          device=("cpu",), suite_files=(TINY,)))[:2]


def _meta(run_dir: Path) -> dict:
    return json.loads((run_dir / "meta.json").read_text())


def _an_ab_run_with_one_row(tmp_path: Path, cases) -> Path:
    with Session.create("ab", tmp_path, "x", cases, OPTIONS, {"ab": {"rounds": 0}},
                        command=["jitbench", "ab"], total=8) as session:
        assert (session.total, session.done) == (8, 0)
        with session.running():
            session.write(lambda: session.record.write_failure(cases[0], "skipped", "why"))
    return session.run_dir


def test_a_run_is_born_once_in_its_folder_with_its_kind_options_and_command(tmp_path):
    cases = _cases()
    run_dir = _an_ab_run_with_one_row(tmp_path, cases)
    assert run_dir == tmp_path / "x" and (run_dir / run_folder.LOGS).is_dir()
    meta = _meta(run_dir)
    assert (meta["kind"], meta["ab"], meta["command"]) == ("ab", {"rounds": 0}, ["jitbench", "ab"])
    assert meta["status"] == "complete" and meta["n_cases"] == 2
    assert meta["case_timeout_s"] == 60.0  # the options, read back by a resume
    rows = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(rows) == 1 and json.loads(rows[0])["status"] == "skipped"
    with pytest.raises(UserError, match="already holds results"):
        with Session.create("ab", tmp_path, "x", cases, OPTIONS):
            pass
    with pytest.raises(UserError, match="cannot name a folder"):
        with Session.create("run", tmp_path, "a/b", cases, OPTIONS):
            pass


def test_a_run_is_resumed_as_its_own_kind_only(tmp_path):
    cases = _cases()
    run_dir = _an_ab_run_with_one_row(tmp_path, cases)
    with pytest.raises(UserError, match=r"not a run but an A/B run; resume it with "
                                        r"`jitbench ab --resume"):
        with Session.resume(run_dir, "run"):
            pass
    with Session.resume(run_dir, "ab") as (session, again, recorded):
        assert again == cases and len(recorded) == 1
        assert (session.total, session.done, session.options.case_timeout) == (2, 1, 60.0)
        session.restart(1, ["jitbench", "ab", "--resume"])
        assert _meta(run_dir)["status"] == "running"
    assert _meta(run_dir)["resumes"][-1]["command"] == ["jitbench", "ab", "--resume"]


def test_every_loop_of_a_session_is_guarded_and_logs_where_results_names_it(tmp_path):
    cases = _cases()
    key = worker_key(cases[0])
    with Session.create("run", tmp_path, "r", cases, OPTIONS) as session:
        run_loop = session.loop()
        warm = session.loop(Protocol(min_samples=1), capture=False, log_prefix="warm-",
                            env_group_prefix="warm:", fresh_worker_per_group=True)
        sweep = session.loop(warm_up=False, capture=False, log_prefix="sweep-")
    for loop in (run_loop, warm, sweep):
        assert loop.critical == session.stopper.critical  # a worker's start is never cut
    assert run_loop.log_for(key) == tmp_path / "r" / "logs" / f"{'-'.join(key)}.log"
    assert warm.log_for(key) == run_folder.log_path(tmp_path / "r", key, "warm-")
    assert (run_loop.protocol, warm.protocol) == (OPTIONS.protocol, Protocol(min_samples=1))
    assert run_loop.capture is not None and warm.capture is None
    assert warm.fresh_worker_per_group and not run_loop.fresh_worker_per_group
    assert WARMUP_ENV in warm.env_for(key) and WARMUP_ENV not in sweep.env_for(key)
