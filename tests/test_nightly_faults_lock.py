"""What a CI does to a night (issue 63), in process and with small child scripts: a second night
on one results folder refuses at once (jitbench.nightly.lock, exit 4) and the shards of one
night hold the folder together; a lock passed down to the recipe's child is held, not refused;
signals sent to a process waiting in ``launch.forward`` reach its child once and wait for its
clean stop; an abbreviated option is an error and the recipe passes on the night's own words.
Whole nights started together and the recipe's driver stopped by SIGTERM:
tests/test_nightly_faults_lock_e2e.py."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from jitbench.nightly.lock import (
    HELD_ENV,
    LOCK_NAME,
    LOCKED_EXIT,
    NightLocked,
    describe,
    night_lock,
)

ROOT = Path(__file__).resolve().parent.parent


def _hold(results: Path, shared: bool = False, record: dict | None = None) -> int:
    """Another night's hold on ``results`` (a descriptor of its own open file, so that this
    process's lock conflicts with it as another process's would)."""
    results.mkdir(parents=True, exist_ok=True)
    fd = os.open(results / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    if record is not None:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(record).encode())
    return fd


OTHER = {"pid": 4242, "host": "ci-runner-7", "command": "jitbench nightly --results R",
         "started_at": "2026-01-01T02:00:00+0000"}


@pytest.mark.unit
def test_a_second_night_refuses_at_once_naming_the_holder(tmp_path):
    fd = _hold(tmp_path, record=OTHER)
    try:
        started = time.monotonic()
        with pytest.raises(NightLocked) as refused, night_lock(tmp_path, "jitbench nightly"):
            raise AssertionError("a second night ran")
        assert time.monotonic() - started < 2
        said = str(refused.value)
        assert "pid 4242 on ci-runner-7" in said and "jitbench nightly --results R" in said
        assert "nothing was run" in said and refused.value.holder == OTHER
    finally:
        os.close(fd)
    assert LOCKED_EXIT == 4


@pytest.mark.unit
def test_the_lock_records_its_holder_is_taken_again_in_process_and_released(tmp_path):
    results = tmp_path / "new" / "results"  # created where missing
    path = results / LOCK_NAME
    with night_lock(results, "jitbench nightly --results X") as held:
        record = json.loads(path.read_text())
        assert record["pid"] == os.getpid() and record["command"] == "jitbench nightly --results X"
        assert record["host"] and record["started_at"]
        with night_lock(results, "the recipe's driver, again") as again:  # one hold
            assert again is held
        probe = os.open(path, os.O_RDWR)
        with pytest.raises(BlockingIOError):  # still held after the inner block
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released
    os.close(probe)
    assert path.exists() and path.read_text() == ""  # kept, naming nobody


@pytest.mark.unit
def test_a_dead_holder_leaves_no_stale_lock(tmp_path):
    fd = _hold(tmp_path, record=OTHER)
    os.close(fd)  # the holder died: the kernel released its flock, its record is still there
    with night_lock(tmp_path, "tonight"):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["command"] == "tonight"


@pytest.mark.unit
def test_the_shards_of_a_night_hold_it_together_and_keep_a_whole_night_out(tmp_path):
    fd = _hold(tmp_path, shared=True)  # shard 1/2
    try:
        with night_lock(tmp_path, "jitbench nightly --shard 2/2", shared=True):
            pass
        with pytest.raises(NightLocked, match=r"the shards of a night"), \
                night_lock(tmp_path, "jitbench nightly"):
            pass
    finally:
        os.close(fd)
    fd = _hold(tmp_path, record=OTHER)  # a whole night keeps a shard out
    try:
        with pytest.raises(NightLocked, match="pid 4242"), \
                night_lock(tmp_path, "jitbench nightly --shard 1/2", shared=True):
            pass
    finally:
        os.close(fd)


@pytest.mark.unit
def test_a_lock_passed_down_is_held_and_a_stale_variable_is_not_trusted(tmp_path, monkeypatch):
    fd = _hold(tmp_path, record=OTHER)  # the parent's descriptor, as the child inherits it
    try:
        monkeypatch.setenv(HELD_ENV, f"{fd}:{tmp_path.absolute() / LOCK_NAME}")
        with night_lock(tmp_path, "the recipe's night") as held:
            assert held.child() == ({}, ())  # not this process's to pass on or release
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the parent still holds it
        other = os.open(os.devnull, os.O_RDONLY)  # a descriptor, of another file
        for stale in (f"{other}:{tmp_path.absolute() / LOCK_NAME}", f"{fd}:/elsewhere/x",
                      "junk"):
            monkeypatch.setenv(HELD_ENV, stale)
            with pytest.raises(NightLocked), night_lock(tmp_path, "a copied variable"):
                pass
        os.close(other)
    finally:
        os.close(fd)


@pytest.mark.unit
def test_wait_lock_waits_for_the_holder_to_end(tmp_path):
    fd = _hold(tmp_path, record=OTHER)
    told: list[str] = []
    timer = threading.Timer(0.4, os.close, (fd,))
    timer.start()
    started = time.monotonic()
    with night_lock(tmp_path, "the next night", wait=30, on_wait=told.append):
        waited = time.monotonic() - started
    timer.join()
    assert 0.3 < waited < 10
    assert told == [describe(OTHER)]


@pytest.mark.unit
def test_a_refused_night_exits_4_before_anything_runs(tmp_path, monkeypatch, capsys):
    from jitbench.cli.main import main
    from jitbench.nightly import night

    monkeypatch.setattr(night, "nightly", lambda *a, **k: pytest.fail("the night ran"))
    fd = _hold(tmp_path / "r", record=OTHER)
    try:
        for words in ([], ["--no-run"], ["--accept", "n1", "--reason", "wanted"],
                      ["--environments", str(tmp_path / "envs")]):
            code = main(["nightly", "--results", str(tmp_path / "r"), "--reports",
                         str(tmp_path / "p"), *words])
            err = capsys.readouterr().err
            assert code == LOCKED_EXIT, (words, err)
            assert "another night holds" in err and "pid 4242 on ci-runner-7" in err
        assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [LOCK_NAME]
        assert not (tmp_path / "envs").exists()
    finally:
        os.close(fd)


@pytest.mark.unit
def test_read_only_replays_take_no_lock(tmp_path, monkeypatch):
    import jitbench.cli.main as cli

    import jitbench.cli.nightly as nightly_cli

    monkeypatch.setattr(nightly_cli, "_nightly_corpus", lambda args: 0)
    fd = _hold(tmp_path, record=OTHER)
    try:
        assert cli.main(["nightly", "--results", str(tmp_path), "--corpus", "c.json"]) == 0
        assert cli.main(["nightly", "--evaluate", str(tmp_path)]) == 0
    finally:
        os.close(fd)


@pytest.mark.unit
def test_the_nightly_help_names_exit_4_and_wait_lock():
    from jitbench.cli.args import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "4 when another night holds --results" in sub._choices_actions[
        [c.dest for c in sub._choices_actions].index("nightly")].help
    assert parser.parse_args(["nightly", "--wait-lock", "60"]).wait_lock == 60
    assert parser.parse_args(["nightly"]).wait_lock == 0


@pytest.mark.unit
@pytest.mark.parametrize("words, full", [
    (["nightly", "--env", "x"], "--environments"),
    (["nightly", "--requirement=x"], "--requirements"),
    (["run", "--min", "0.1"], "--min-time"),
    (["--deb", "list"], "--debug"),
])
def test_an_abbreviated_option_is_an_error_naming_its_full_spelling(words, full, capsys):
    from jitbench.cli.main import main

    with pytest.raises(SystemExit) as ended:
        main(words)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and full in err


@pytest.mark.unit
@pytest.mark.parametrize("words", [
    ["--debug", "nightly", "--environments", "ENVS", "--results", "R", "--size", "quick",
     "--requirements", "REQ"],
    ["nightly", "--environments=ENVS", "--results", "R", "--requirements=REQ", "--size",
     "quick"],
    ["--debug", "nightly", "--results", "R", "--prepare", "--environments", "ENVS", "--size",
     "quick", "--requirements", "REQ"],
])
def test_the_recipe_passes_on_the_nights_own_words(words, tmp_path, monkeypatch):
    from jitbench.cli.main import main
    from jitbench.nightly import environments

    monkeypatch.chdir(tmp_path)
    seen = {}

    def run(root, requirements, night_args, results, *, prepare_only=False):
        seen.update(root=root, requirements=requirements, night_args=list(night_args),
                    results=results, prepare_only=prepare_only)
        return 0

    monkeypatch.setattr(environments, "run", run)
    assert main(words) == 0
    assert seen["night_args"] == ["--results", "R", "--size", "quick"]
    assert seen["root"] == "ENVS" and seen["requirements"] == "REQ" and seen["results"] == "R"
    assert seen["prepare_only"] == ("--prepare" in words)


# --- launch.forward with real child scripts -------------------------------------------------

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    out = sys.argv[1]

    def stop(signum, frame):
        time.sleep(1.0)  # a clean stop longer than subprocess.run's 0.25 s grace
        with open(os.path.join(out, "stopped"), "a") as fh:
            fh.write(signal.Signals(signum).name + "\\n")
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(os.path.join(out, "child.pid"), "w") as fh:
        fh.write(str(os.getpid()))
    while True:
        time.sleep(0.05)
""")

PARENT = textwrap.dedent("""
    import json, signal, sys
    from jitbench import launch
    out = sys.argv[1]
    # what this process had before (a shell's background job starts with SIGINT ignored)
    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    code = launch.forward([sys.executable, sys.argv[2], out])
    handlers = [signal.getsignal(s) == h for s, h in zip((signal.SIGINT, signal.SIGTERM), before)]
    with open(out + "/parent.json", "w") as fh:
        json.dump({"code": code, "restored": handlers}, fh)
    sys.exit(code)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_forward_reaches_the_child_once_and_waits_for_its_clean_stop(tmp_path, sig):
    (tmp_path / "child.py").write_text(CHILD)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path),
                               str(tmp_path / "child.py")], cwd=ROOT)
    deadline = time.monotonic() + 30
    while not (tmp_path / "child.pid").exists():
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    child = int((tmp_path / "child.pid").read_text())
    parent.send_signal(sig)
    assert parent.wait(timeout=30) == 128 + sig
    assert (tmp_path / "stopped").read_text() == f"{signal.Signals(sig).name}\n"  # once
    said = json.loads((tmp_path / "parent.json").read_text())
    assert said == {"code": 128 + sig, "restored": [True, True]}
    assert not _alive(child)


def test_forward_reports_a_child_killed_by_a_signal_as_128_plus_it(tmp_path):
    from jitbench import launch

    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert launch.forward([sys.executable, "-c", killed]) == 128 + signal.SIGKILL
    assert launch.forward([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert launch.forward([str(tmp_path / "no-such-program")]) == 127
