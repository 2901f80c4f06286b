"""A ladder or a bisect that was stopped continues (``jitbench.releases.resume``,
``jitbench releases --resume LADDER_DIR``): ``releases.json`` written as it begins and after each
A/B (``running``, then ``interrupted`` or ``complete``), a complete A/B reused as it is, an
unfinished one continued by the A/B engine's own resume, the rest measured; a bisect led by its
reused comparisons through the same halving; the error where a folder holds a ladder names it
and the command that continues it. Also here: ``--retry`` and ``--extra`` passed to the
environments, and a step whose compiled program alone changed counted apart.

The unit tests run over the stand-in A/B engine of tests/test_releases.py (no process); the
e2e one stops a real ladder (real JAX, tiny sizes, three arms of this interpreter) with SIGTERM
inside its second A/B and continues it from the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitbench.errors import Interrupted, UserError
from jitbench.releases import envs, ladder
from jitbench.releases import record as record_file
from jitbench.releases import step
from jitbench.run import ab_arms
from test_releases import SETTINGS, FakeEngine, rung

unit = pytest.mark.unit


class StoppingEngine(FakeEngine):
    """The stand-in engine, stopped by a signal in its ``stop_at``-th A/B (from 1) after one
    round (its folder left ``interrupted``, as the engine leaves it), and the A/B engine's
    resume (:meth:`resume`), which completes such a folder with its own recorded arms."""

    def __init__(self, stop_at: int | None = None, pairs: int = 6):
        super().__init__(pairs)
        self.stop_at, self.resumed = stop_at, []

    def __call__(self, cases, out_root, arms, settings, **kw):
        if self.stop_at is not None and len(self.calls) + 1 == self.stop_at:
            self.calls.append((arms[0].env_dict.get("NAME"), arms[1].env_dict.get("NAME"),
                               settings.time_limit))
            run_dir = out_root / kw["run_id"]
            run_dir.mkdir(parents=True)
            self.write(run_dir, arms, settings, 1, status="interrupted")
            raise Interrupted(signal.SIGTERM, run_dir, 6, 36, resume="jitbench ab --resume")
        return super().__call__(cases, out_root, arms, settings, **kw)

    def resume(self, run_dir, *, command=None, on_progress=None):
        run_dir = Path(run_dir)
        self.resumed.append(run_dir.name)
        ab = json.loads((run_dir / "meta.json").read_text())["ab"]
        arms = tuple(ab_arms.parse_arm(n, ab["arms"][n]["spec"]) for n in ab_arms.ARMS)
        settings = ab_arms.Settings(**{k: ab["settings"][k] for k in
                                       ("tolerance", "confidence", "max_pairs")})
        return self.write(run_dir, arms, settings, self.pairs)


@pytest.fixture
def stopping(monkeypatch):
    def make(stop_at=None):
        fake = StoppingEngine(stop_at)
        monkeypatch.setattr(ab_arms, "run_ab", fake)
        monkeypatch.setattr(ab_arms, "resume_ab", fake.resume)
        return fake

    return make


RUNGS = [rung("1"), rung("2"), rung("3", LEVEL=2.0)]


def _record(folder: Path) -> dict:
    return json.loads((folder / record_file.FILE).read_text())


@unit
def test_the_record_is_written_as_the_ladder_begins_and_after_each_step(stopping, tmp_path):
    stopping()
    seen = []

    def say(line):  # as each A/B begins: what releases.json says then
        if "A/B in" in line:
            seen.append(_record(tmp_path / "lad"))

    record = ladder.run_ladder(["c"], RUNGS, tmp_path / "lad", SETTINGS, say=say)
    assert [r["status"] for r in seen] == ["running", "running"]
    assert [len(r["steps"]) for r in seen] == [0, 1]
    assert seen[1]["comparisons"][0]["before"] == "1" and seen[1]["planned"] == [["1", "2"],
                                                                                  ["2", "3"]]
    assert record["status"] == "complete" == _record(tmp_path / "lad")["status"]


@unit
def test_a_stopped_ladder_reuses_its_complete_ab_continues_the_one_it_was_in_measures_the_rest(
        stopping, tmp_path):
    rungs = [*RUNGS, rung("4")]
    first = stopping(stop_at=2)
    folder = tmp_path / "lad"
    with pytest.raises(KeyboardInterrupt):
        ladder.run_ladder(["c"], rungs, folder, SETTINGS)
    stopped = _record(folder)
    assert stopped["status"] == "interrupted"
    assert [(c["before"], c["after"], c["how"]) for c in stopped["comparisons"]] == [
        ("1", "2", "measured")]
    kept = folder / "01-1-vs-2" / "results.jsonl"
    before = (kept.stat().st_mtime_ns, kept.read_bytes())
    assert len(first.calls) == 2

    again = stopping()
    lines = []
    record = ladder.run_ladder(["c"], rungs, folder, SETTINGS, resume=True, say=lines.append)
    assert (kept.stat().st_mtime_ns, kept.read_bytes()) == before
    assert again.resumed == ["02-2-vs-3"] and [c[:2] for c in again.calls] == [("3", "4")]
    assert [c["how"] for c in record["comparisons"]] == ["reused", "resumed", "measured"]
    assert record["status"] == "complete" and len(record["steps"]) == 3
    assert record["cost"]["comparisons_reused"] == 1 and record["cost"]["sessions"] == 2
    assert by_mode(record["steps"][1])["jit"]["stepped"][:1] == ["time"]
    assert any("01-1-vs-2 is complete, reused" in line for line in lines)
    assert "1 reused from an earlier session" in "\n".join(record_file.lines(record))


def by_mode(step):
    return {c["mode"]: c for c in step["cases"]}


@unit
def test_a_ladder_stopped_as_an_ab_began_measures_that_ab_when_continued(stopping, tmp_path):
    engine = stopping()
    starts = []

    def say(line):  # Ctrl-C as the second A/B begins: no folder of it yet
        if "A/B in" in line:
            starts.append(line)
            if len(starts) == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ladder.run_ladder(["c"], RUNGS, tmp_path / "lad", SETTINGS, say=say)
    assert _record(tmp_path / "lad")["status"] == "interrupted"
    assert not (tmp_path / "lad" / "02-2-vs-3").exists() and len(engine.calls) == 1
    record = ladder.run_ladder(["c"], RUNGS, tmp_path / "lad", SETTINGS, resume=True)
    assert [c["how"] for c in record["comparisons"]] == ["reused", "measured"]
    assert len(engine.calls) == 2 and engine.resumed == []


@unit
def test_a_folder_that_holds_a_ladder_is_named_with_the_command_that_continues_it(
        stopping, tmp_path):
    stopping(stop_at=2)
    folder = tmp_path / "lad"
    with pytest.raises(KeyboardInterrupt):
        ladder.run_ladder(["c"], RUNGS, folder, SETTINGS)
    with pytest.raises(UserError) as caught:
        ladder.run_ladder(["c"], RUNGS, folder, SETTINGS)
    assert str(folder) in str(caught.value) and "left interrupted" in str(caught.value)
    assert f"`jitbench releases --resume {folder}`" in str(caught.value)
    ladder.run_ladder(["c"], RUNGS, folder, SETTINGS, resume=True)
    with pytest.raises(UserError, match="holds a complete ladder already"):
        ladder.run_ladder(["c"], RUNGS, folder, SETTINGS)
    other = tmp_path / "other"
    (other / "01-1-vs-2").mkdir(parents=True)  # an older jitbench's, or anything else
    with pytest.raises(UserError, match=r"other exists and holds no releases\.json.*--run-id"):
        ladder.run_ladder(["c"], RUNGS, other, SETTINGS)


@unit
def test_a_complete_ab_measured_with_other_arms_is_named_with_both(stopping, tmp_path):
    stopping(stop_at=2)
    with pytest.raises(KeyboardInterrupt):
        ladder.run_ladder(["c"], RUNGS, tmp_path / "lad", SETTINGS)
    stopping()
    moved = [rung("1", LEVEL=3.0), *RUNGS[1:]]  # another environment under the same name
    with pytest.raises(UserError) as caught:
        ladder.run_ladder(["c"], moved, tmp_path / "lad", SETTINGS, resume=True)
    said = str(caught.value)
    assert "01-1-vs-2 measured A 'NAME=1' and B 'NAME=2'" in said
    assert "1 -> 2 is A 'NAME=1 LEVEL=3.0' and B 'NAME=2'" in said


@unit
def test_a_continued_bisect_takes_the_same_halving_through_its_reused_comparisons(
        stopping, tmp_path):
    names = [f"0.{i}.0" for i in range(1, 10)]
    rungs = [rung(n, LEVEL=3.0 if i >= 6 else 1.0) for i, n in enumerate(names)]
    stopping()
    whole = ladder.run_bisect(["c"], rungs, tmp_path / "whole", names[0], names[-1], SETTINGS)
    first = stopping(stop_at=3)
    with pytest.raises(KeyboardInterrupt):
        ladder.run_bisect(["c"], rungs, tmp_path / "bis", names[0], names[-1], SETTINGS)
    assert len(_record(tmp_path / "bis")["comparisons"]) == 2
    again = stopping()
    record = ladder.run_bisect(["c"], rungs, tmp_path / "bis", names[0], names[-1], SETTINGS,
                               resume=True)
    keys = ("measured", "comparisons", "environments")
    assert {k: record["bisect"][k] for k in keys} == {k: whole["bisect"][k] for k in keys}
    assert [(s["before"], s["after"], s["case_id"]) for s in record["bisect"]["steps"]] == \
        [(s["before"], s["after"], s["case_id"]) for s in whole["bisect"]["steps"]]
    # the stopped one continued, not measured again
    assert len(again.resumed) == 1 and len(first.calls) + len(again.calls) == \
        len(whole["comparisons"])
    assert [c["how"] for c in record["comparisons"][:3]] == ["reused", "reused", "resumed"]


# --------------------------------------------------------------------------- the command line

def _main(argv, tmp_path):
    from jitbench.cli.main import main

    out = [] if "--resume" in argv else ["--out", str(tmp_path / "r")]  # the folder's own
    return main(["releases", *argv, *out, "--reports", str(tmp_path / "p")])


FILTERS = ["--suite", "matmul_relu", "--framework", "jax", "--variant", "fused"]
ARMS = ["--arm", "NAME=1", "--arm", "NAME=2", "--arm", "NAME=3 LEVEL=2", *FILTERS,
        "--run-id", "lad"]


@unit
def test_the_command_says_how_to_continue_and_resume_continues_with_its_own_command(
        stopping, tmp_path, capsys):
    stopping(stop_at=2)
    assert _main([*ARMS, "--no-report"], tmp_path) == 128 + signal.SIGTERM
    folder = tmp_path / "r" / "lad"
    err = capsys.readouterr().err
    assert (f"interrupted (SIGTERM); 1 of 2 steps complete in {folder} (named in its "
            f"releases.json); continue with: jitbench releases --resume {folder}") in err
    engine = stopping()
    from jitbench.cli.main import main

    code = main(["releases", "--resume", str(folder), "--json", "--no-report"])
    out = capsys.readouterr().out
    assert code == 0, out
    record = json.loads(out)
    assert [c["how"] for c in record["comparisons"]] == ["reused", "resumed"]
    assert record["command"][:3] == ["jitbench", "releases", "--arm"]
    assert engine.resumed == ["02-NAME_2-vs-NAME_3_LEVEL_2"] and engine.calls == []
    assert _record(folder)["status"] == "complete"


@unit
@pytest.mark.parametrize("argv, says", [
    (["--resume", "{folder}", "--suite", "mmd"], "leave out --suite"),
    (["--resume", "{folder}", "jax", "0.4.31"], "leave out jax, 0.4.31"),
    (["--resume", "{missing}"], "holds no releases.json"),
    (ARMS, ("holds a ladder left interrupted with 1 A/B run(s) made; continue it with "
            "`jitbench releases --resume {folder}`")),
    (["--arm", "A=1", "--arm", "A=2", "--extra", "cuda12", *FILTERS],
     "--extra cuda12 is an extra of a package's releases"),
    (["jax", "0.4.31", "0.5.0", "--extra", "cuda 12", *FILTERS],
     "--extra 'cuda 12' is not an extra's name"),
    (["jax[cpu]", "0.4.31", "0.5.0", "--extra", "cuda12", *FILTERS], "name the extra once"),
])
def test_bad_resume_and_extra_command_lines_are_exit_2_naming_them(
        argv, says, stopping, tmp_path, capsys):
    stopping(stop_at=2)
    _main([*ARMS, "--no-report"], tmp_path)
    capsys.readouterr()
    folder, missing = tmp_path / "r" / "lad", tmp_path / "r" / "nothing"
    argv = [a.format(folder=folder, missing=missing) for a in argv]
    code = _main([*argv, "--no-report"], tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert says.format(folder=folder) in err[0], err


@unit
@pytest.mark.parametrize("extra", [[], ["--retry"], ["--extra", "cuda12"]])
def test_retry_and_extra_reach_every_environment(extra, monkeypatch, tmp_path, capsys):
    asked = []

    def ensure(requirement, cache=None, **kw):
        asked.append((requirement, kw.get("retry")))
        return envs.ReleaseEnv(requirement, tmp_path / requirement, None, "no wheel", True)

    monkeypatch.setattr(envs, "ensure", ensure)
    code = _main(["jax", "0.4.31", "0.5.0", "--suite", "matmul_relu", *extra, "--no-report"],
                 tmp_path)
    assert code == 2 and "0 of 2 environments can be measured" in capsys.readouterr().err
    req = "jax[cuda12]=={}" if "--extra" in extra else "jax=={}"
    assert asked == [(req.format(v), "--retry" in extra) for v in ("0.4.31", "0.5.0")]
    # a bisect's candidates are built as the halving reaches them, with the same options
    asked.clear()
    code = _main(["jax", "--good", "0.4.31", "--bad", "0.5.0", "--candidates", "0.4.35",
                  "--suite", "matmul_relu", *extra, "--no-report"], tmp_path)
    assert code == 2 and "--good 0.4.31: its environment cannot be measured" in \
        capsys.readouterr().err
    assert asked == [(req.format("0.4.31"), "--retry" in extra)]


@unit
def test_a_case_whose_program_alone_changed_is_counted_apart(stopping, tmp_path):
    from jitbench.report.html import template_environment
    from jitbench.report.releases_page import render

    stopping()
    rungs = [rung("1"), rung("2", PROGRAM="p2"), rung("3", PROGRAM="p2", LEVEL=2.0)]
    record = ladder.run_ladder(["c"], rungs, tmp_path / "lad", SETTINGS)
    first = record["steps"][0]
    assert by_mode(first)["jit"]["stepped"] == ["program"]
    assert step.counts(first["cases"]) == {"stepped": 0, "program_only": 2, "cases": 3}
    text = "\n".join(record_file.lines(record))
    assert "1 -> 2: 0 of 3 cases stepped; 2 more changed program only (6 pairs)" in text
    assert "2 -> 3: 2 of 3 cases stepped (6 pairs)" in text
    page = render(record, template_environment())
    assert "1 → 2: 0 of 3 cases stepped; 2 more changed program only" in page
    assert "2 → 3: 2 of 3 cases stepped<" in page


# --------------------------------------------------------------------------- end to end

WORKLOAD = (Path(__file__).parent / "workloads" / "tanh_gram.py").read_text()
JITBENCH = str(Path(sys.executable).with_name("jitbench"))


def _rows(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip()) \
        if path.is_file() else 0


@pytest.mark.e2e
def test_a_ladder_killed_inside_its_second_ab_continues_from_the_command_line(tmp_path):
    """Four arms of this interpreter (an A/A ladder), SIGTERM once the second A/B has rows:
    releases.json names the first step; --resume reuses the first A/B untouched, continues the
    second through the A/B engine's resume and measures the third."""
    workload = tmp_path / "elsewhere" / "mine.py"
    workload.parent.mkdir()
    workload.write_text(WORKLOAD)
    env = {**os.environ, "PYTHONPATH": ""}
    argv = [JITBENCH, "releases", "--suite-file", str(workload), "--suite", "mine",
            "--framework", "jax", "--mode", "eager,jit", "--device", "cpu", "--budget", "0.15",
            "--max-pairs", "4", "--arm", "X=1", "--arm", "X=2", "--arm", "X=3", "--arm", "X=4",
            "--out", "results", "--no-report", "--run-id", "lad"]
    folder = tmp_path / "results" / "lad"
    second = folder / "02-X_2-vs-X_3"
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    try:
        while _rows(second / "results.jsonl") == 0:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the second A/B never began"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert f"continue with: jitbench releases --resume {Path('results') / 'lad'}" in err
    stopped = json.loads((folder / "releases.json").read_text())
    assert stopped["status"] == "interrupted"
    assert [(c["before"], c["after"]) for c in stopped["comparisons"]] == [("X=1", "X=2")]
    assert json.loads((second / "meta.json").read_text())["status"] == "interrupted"
    kept = folder / "01-X_1-vs-X_2" / "results.jsonl"
    before = (kept.stat().st_mtime_ns, kept.read_bytes())

    done = subprocess.run([JITBENCH, "releases", "--resume", str(folder), "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["status"] == "complete" and record["cost"]["sessions"] == 2
    assert [c["how"] for c in record["comparisons"]] == ["reused", "resumed", "measured"]
    assert (kept.stat().st_mtime_ns, kept.read_bytes()) == before
    meta = json.loads((second / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["resumes"] and meta["ab"]["rounds"] >= 3
    assert all(s["rounds"] >= 3 for s in record["steps"]) and len(record["steps"]) == 3
    assert (tmp_path / "reports" / "lad" / "index.html").is_file()


def test_a_ladder_records_its_command_to_resume_from_anywhere(tmp_path, monkeypatch):
    """The recorded command starts at the sub-command (a global --debug before it is left
    out) and holds absolute paths, so `--resume` from another folder reads the same files."""
    from jitbench.cli.releases import recorded_command

    monkeypatch.chdir(tmp_path)
    said = recorded_command(["--debug", "releases", "jax", "0.4.31", "0.5.0", "--suite-file",
                             "mine.py", "--envs=envs", "--out", "results", "--suite", "mine"])
    assert said == ["jitbench", "releases", "jax", "0.4.31", "0.5.0", "--suite-file",
                    str(tmp_path / "mine.py"), f"--envs={tmp_path / 'envs'}", "--out",
                    str(tmp_path / "results"), "--suite", "mine"]


@unit
def test_a_rung_built_on_resume_reuses_the_steps_measured_around_it(stopping, tmp_path):
    """Rung 2 failed to build in the first session (steps 1 -> 3 -> 4); built on --retry, the
    ladder is 1 -> 2 -> 3 -> 4: the complete 3 -> 4 is reused whatever its number, only the
    new steps are measured."""
    folder = tmp_path / "lad"
    stopping(stop_at=2)
    with pytest.raises(KeyboardInterrupt):
        ladder.run_ladder(["c"], [rung("1"), rung("2", error="no wheel"), rung("3"),
                                  rung("4")], folder, SETTINGS)
    # the stopped second step (3 -> 4) is continued once, then complete
    again = stopping()
    ladder.run_ladder(["c"], [rung("1"), rung("2", error="no wheel"), rung("3"), rung("4")],
                      folder, SETTINGS, resume=True)
    assert again.resumed == ["02-3-vs-4"]
    built = stopping()
    record = ladder.run_ladder(["c"], [rung("1"), rung("2"), rung("3"), rung("4")], folder,
                               SETTINGS, resume=True)
    assert [c[:2] for c in built.calls] == [("1", "2"), ("2", "3")] and built.resumed == []
    assert [(c["before"], c["after"], c["how"]) for c in record["comparisons"]] == [
        ("1", "2", "measured"), ("2", "3", "measured"), ("3", "4", "reused")]
