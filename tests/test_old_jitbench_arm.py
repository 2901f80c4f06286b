"""An older jitbench in arm A (issue 63, item 3): a change night's arm A is the last good
night's interpreter, which keeps the jitbench it measured with; tonight's parent sends its
workers the protocol's settings. A field the older ``Protocol`` does not know must not crash
its workers: the parent leaves out what an arm does not know (it asks the arm's own
``Protocol``), says so, and each worker ignores, and names, a field it does not know.

End to end: arm A runs jitbench installed (not editable) from a real earlier commit; the
parent and arm B run today's tree with a field planted in ``Protocol`` (the next field anyone
adds), so the older jitbench lacks it, as it will lack every field added after it. Planted,
since no field added after that commit has stayed (``lead_in_time`` came and went), and an
earlier jitbench has no worker today's parent can start. The unit tests check the filtering
alone, without a child process."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from jitbench.protocol.settings import Protocol

ROOT = Path(__file__).resolve().parent.parent
# the first commit laid out as today's parent drives its workers (jitbench.run.worker,
# jitbench.run.arm_probe): the oldest jitbench a change night can have in arm A
OLD_COMMIT = "10b229eae14a04ac091bf4d7bb2c9f5661f2c34c"
PLANTED = "planted_setting"
ANCHOR = "    synced_max_rounds: int = 200\n"
TINY = '''
from jitbench.define.workload import Workload


def inputs(p, dtype, rng):
    return (rng.standard_normal((p["n"], p["n"])).astype(dtype),)


WORKLOAD = Workload(
    name="tiny_arm", description="tanh(x) + x, JAX only", grid={"quick": [dict(n=64)]},
    dtypes=("float32",), inputs=inputs, reference=lambda xs, p, v: __import__("numpy").tanh(
        xs[0]) + xs[0], flops=lambda p, v: 2.0 * p["n"] ** 2,
    tolerance={"float32": (1e-4, 1e-5)},
    jax=lambda p, dtype, variant: [lambda x: __import__("jax.numpy").numpy.tanh(x) + x],
    size_label=lambda p: f"n{p['n']}")
'''


# --------------------------------------------------------------------------- unit

@pytest.mark.unit
def test_a_message_with_fields_this_protocol_lacks_builds_it_and_names_them():
    sent = {**dataclasses.asdict(Protocol(budget=0.2)), "from_the_future": 1, "another": "x"}
    protocol, unknown = Protocol.from_message(sent)
    assert protocol == Protocol(budget=0.2)
    assert unknown == ["another", "from_the_future"]
    # a field added since (settings.BEFORE) that an older parent's message lacks is measured
    # as before it existed, not at today's default
    assert Protocol.from_message({}) == (Protocol(pipeline_time=None, min_block_time=None), [])


@pytest.mark.unit
def test_an_older_record_or_arm_measures_the_new_fields_as_before_they_existed():
    from jitbench.run.options import RunOptions

    recorded = {k: v for k, v in dataclasses.asdict(Protocol(budget=0.2)).items()
                if k not in ("pipeline_time", "min_block_time")}  # a night recorded before
    resumed = RunOptions.from_meta({"protocol": recorded}).protocol
    assert resumed.pipeline_time is None and resumed.min_block_time is None
    assert RunOptions.from_meta({}).protocol == Protocol()  # nothing recorded: the defaults
    # an older worker is not told of a new field whose value is how it measures anyway, and no
    # arm is warned about it; one at today's default is named
    known = [f.name for f in dataclasses.fields(Protocol)
             if f.name not in ("pipeline_time", "min_block_time")]
    night = Protocol(pipeline_time=None, min_block_time=None)
    assert night.as_message(known)[1] == []
    assert Protocol().as_message(known)[1] == ["pipeline_time", "min_block_time"]


@pytest.mark.unit
def test_a_message_keeps_only_the_fields_the_receiver_knows():
    protocol = Protocol(budget=0.2, seed=3)
    known = [f.name for f in dataclasses.fields(Protocol) if f.name != "seed"]
    message, dropped = protocol.as_message(known)
    assert "seed" not in message and message["budget"] == 0.2
    assert dropped == ["seed"]
    assert protocol.as_message(None) == (dataclasses.asdict(protocol), [])
    # what an older jitbench receives builds its Protocol, with its own default for the rest
    assert Protocol.from_message(message) == (dataclasses.replace(protocol, seed=0), [])
    assert "pipeline_time" in message and "min_block_time" in message


@pytest.mark.unit
def test_a_worker_names_the_fields_it_does_not_know_once_and_measures_without_them(capsys):
    from jitbench.run.worker import protocol_of

    told: set[str] = set()
    sent = {**dataclasses.asdict(Protocol(budget=0.2)), "from_the_future": 1}
    assert protocol_of(sent, told) == Protocol(budget=0.2)
    assert protocol_of({**sent, "later": 2}, told) == Protocol(budget=0.2)
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 2 and said[0].endswith(": from_the_future") and \
        said[1].endswith(": later"), said
    with pytest.raises(ValueError):  # a bad setting is the group's failure (worker.main)
        protocol_of({"interleave": "nonsense"}, told)


@pytest.mark.unit
def test_a_worker_is_sent_only_the_protocol_fields_its_jitbench_knows():
    from jitbench.run.worker_parent import Worker

    sent = []
    worker = Worker.__new__(Worker)  # no process: what run_group hands to run_job
    worker.run_job = lambda msg, timeout, doing: sent.append(msg) or iter(())
    for known, expected in ((("budget", "seed"), {"budget": 0.2, "seed": 0}),
                            (None, dataclasses.asdict(Protocol(budget=0.2)))):
        worker.protocol_fields = known
        assert list(worker.run_group([], Protocol(budget=0.2), 1.0)) == []
        assert sent.pop()["protocol"] == expected


@pytest.mark.unit
def test_the_ab_names_each_arm_whose_jitbench_lacks_fields_and_reads_the_probes_lines():
    from jitbench.run.ab_arms import _json_lines, dropped_fields

    facts = {"a": {"jitbench": {"version": "0.1.0"}, "dropped_protocol_fields": ["x", "y"]},
             "b": {"jitbench": {}, "dropped_protocol_fields": []}}
    assert dropped_fields(facts) == [("arm A's jitbench 0.1.0 does not know protocol fields: "
                                      "x, y; it measures with its own defaults for them")]
    printed = '{"python": "p", "packages": {}}\nsome library\'s line\n{"protocol_fields": []}\n'
    assert _json_lines(printed) == {"python": "p", "packages": {}, "protocol_fields": []}


@pytest.mark.unit
@pytest.mark.parametrize("second_line, says", [
    ('{"protocol_error": "ImportError: no Protocol"}', "(ImportError: no Protocol)"),
    ("", "(it printed no list of its protocol settings)")])
def test_an_arm_whose_jitbench_cannot_say_its_protocol_fields_is_a_user_error(
        monkeypatch, second_line, says):
    import types

    from jitbench.errors import UserError
    from jitbench.run import ab_arms

    first = json.dumps({"python": "/old/python", "python_version": "3.11.7", "packages": {},
                        "missing_frameworks": []})
    monkeypatch.setattr(ab_arms.launch, "tool", lambda argv, timeout, env: types.SimpleNamespace(
        returncode=0, stdout=f"{first}\n{second_line}\n", stderr=""))
    with pytest.raises(UserError) as caught:
        ab_arms.probe(ab_arms.Arm("a", "/old/python"), ["jax"])
    assert str(caught.value).startswith("--a: /old/python's jitbench cannot say which protocol "
                                        "settings it knows " + says), caught.value
    assert "install a newer jitbench into it" in str(caught.value)


# --------------------------------------------------------------------------- end to end

def _venv(path: Path, source: Path) -> Path:
    """A virtual environment with jitbench installed from ``source`` (a wheel built and
    installed, not editable) and this environment's other packages on its path, as a plain
    path: this environment's .pth files (its editable jitbench among them) are not read
    there, so the jitbench it imports is its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next((path / "lib").glob("python*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(site), str(source)], check=True,
                   capture_output=True, timeout=300)
    return path / "bin" / "python"


def _today_with_a_planted_field(dest: Path) -> Path:
    """Today's tree with one more ``Protocol`` field: the next one anyone adds."""
    for name in ("bench", "suites"):
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    settings = dest / "bench" / "protocol" / "settings.py"
    text = settings.read_text()
    assert ANCHOR in text, "the planted field's anchor moved: update ANCHOR"
    settings.write_text(text.replace(ANCHOR, ANCHOR + f"    {PLANTED}: float = 0.0\n"))
    return dest


@pytest.fixture(scope="module")
def interpreters(tmp_path_factory):
    """(old, new): arm A's interpreter with jitbench of :data:`OLD_COMMIT`, and today's with
    the planted field; the earlier commit's worktree removed once its wheel is installed."""
    if shutil.which("git") is None or subprocess.run(
            ["git", "-C", str(ROOT), "cat-file", "-e", f"{OLD_COMMIT}^{{commit}}"],
            capture_output=True, check=False).returncode != 0:
        pytest.skip(f"needs git and the repository's history ({OLD_COMMIT[:7]})")
    tmp = tmp_path_factory.mktemp("arms")
    worktree = tmp / "old-src"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree),
                    OLD_COMMIT], check=True, capture_output=True)
    try:
        old = _venv(tmp / "old", worktree)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                       capture_output=True, check=False)
    new = _venv(tmp / "new", _today_with_a_planted_field(tmp / "new-src"))
    return old, new


def _fields(python: Path) -> tuple[str, list[str]]:
    done = subprocess.run([str(python), "-c", (
                           "import dataclasses, json, jitbench; "
                           "from jitbench.protocol.settings import Protocol; print(json.dumps("
                           "[jitbench.__file__, [f.name for f in dataclasses.fields(Protocol)]]))")],
                          capture_output=True, text=True, check=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=""))
    return json.loads(done.stdout)


def test_an_older_jitbench_in_arm_a_measures_with_its_own_defaults_for_fields_it_lacks(
        interpreters, tmp_path):
    old, new = interpreters
    old_file, old_fields = _fields(old)
    new_file, new_fields = _fields(new)
    # each imports its own jitbench, not this environment's editable one
    assert old_file.startswith(str(old.parent.parent)), old_file
    assert new_file.startswith(str(new.parent.parent)), new_file
    assert PLANTED in new_fields and PLANTED not in old_fields
    (tmp_path / "tiny_arm.py").write_text(TINY)
    done = subprocess.run(
        [str(new), "-m", "jitbench", "ab", "--a", f"python={old}", "--suite-file",
         str(tmp_path / "tiny_arm.py"), "--suite", "tiny_arm", "--framework", "jax", "--mode",
         "jit", "--device", "cpu", "--budget", "0.1", "--max-pairs", "3", "--json",
         "--no-report", "--out", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=400, cwd=tmp_path, check=False,
        env=dict(os.environ, PYTHONPATH=""))
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = next((tmp_path / "results").iterdir())
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert {r["ab_arm"] for r in rows if r["status"] == "ok"} == {"a", "b"}, \
        [(r["ab_arm"], r["status"], (r.get("error") or "")[-300:]) for r in rows]
    meta = json.loads((run_dir / "meta.json").read_text())
    arms = meta["ab"]["arms"]
    assert arms["a"]["dropped_protocol_fields"] == [PLANTED]
    assert arms["a"]["jitbench"]["path"][0].startswith(str(old.parent.parent))
    assert arms["b"]["dropped_protocol_fields"] == []
    said = [w for w in json.loads(done.stdout)["warnings"] if PLANTED in w]
    assert said and "arm a's jitbench" in said[0].lower() and "its own defaults" in said[0], said


def test_a_worker_sent_settings_it_cannot_read_fails_that_group_only_and_lives_on(tmp_path):
    """Today's worker: a setting out of range fails its group's rows, not the worker; a field
    it does not know is named in its log once and the group measured without it."""
    from jitbench.define.workload import Filters, expand
    from jitbench.run.ab_arms import PROTOCOL
    from jitbench.run.worker_parent import Worker

    (tmp_path / "tiny_arm.py").write_text(TINY)
    [case] = expand(Filters(suite=("tiny_arm",), mode=("jit",), device=("cpu",),
                            suite_files=(str(tmp_path / "tiny_arm.py"),)))
    worker = Worker("jax", {}, tmp_path / "worker.log")
    try:
        bad = {"group": [case.to_dict()], "protocol": {"interleave": "nonsense"}}
        [row] = worker.run_job(bad, 120, "case group")
        assert row["status"] == "runtime_error" and "interleave" in row["error"], row
        assert worker.alive()
        newer = {**dataclasses.asdict(dataclasses.replace(PROTOCOL, budget=0.1)),
                 "from_the_future": 1}
        for _ in range(2):
            [row] = worker.run_job({"group": [case.to_dict()], "protocol": newer}, 120,
                                   "case group")
            assert row["status"] == "ok", row.get("error")
    finally:
        worker.close()
    assert (tmp_path / "worker.log").read_text().count("from_the_future") == 1
