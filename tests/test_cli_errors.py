"""Everything a user can type wrong: one line naming the bad value (and the valid ones where
there is a fixed set), exit code 2, no traceback; ``--debug`` shows the traceback. Each case
runs the real command line in a process of its own; none of them measures anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = str(Path(__file__).parent / "workloads" / "tiny.py")


def jitbench(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "jitbench", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    (d / "raises.py").write_text("x = 1 / 0\n")
    (d / "syntax.py").write_text("def f(:\n")
    (d / "empty.py").write_text("x = 1\n")
    (d / "notes.txt").write_text("hello\n")
    (d / "a_file").write_text("")
    (d / "plain_dir").mkdir()
    (d / "bad_meta").mkdir()
    (d / "bad_meta" / "meta.json").write_text("{oops")
    (d / "merged").mkdir()  # a run folder without cases.json (e.g. written by `merge`)
    (d / "merged" / "meta.json").write_text(json.dumps({"run_id": "merged"}))
    (d / "merged" / "results.jsonl").write_text("")
    return d


# (arguments, what the one line must contain); {d} is the folder of the fixture above
BAD = [
    (["list", "--suite", "nope"], "unknown suite 'nope'; valid: matmul_relu, mmd, rnn"),
    (["list", "--framework", "torch"], "unknown framework 'torch'; valid: jax, tf"),
    (["list", "--mode", "turbo"],
     "unknown mode 'turbo'; valid: aot, autoclustering, donate, eager, graph"),
    (["list", "--device", "tpu"], "unknown device 'tpu'; valid: cpu, gpu"),
    (["list", "--size", "huge"], "unknown size 'huge'; valid: quick, full"),
    (["list", "--dtype", "int8"], "unknown dtype 'int8'; valid: bfloat16, float32, float64"),
    (["list", "--variant", "nope"], "unknown variant 'nope'; valid: adam-bn_infer, adam-bn_train"),
    (["list", "--suite", ","], "--suite ',' names nothing; leave it out to mean all"),
    (["run", "--framework", "jax", "--mode", "xla"],
     "no cases match these filters: no jax mode is called xla (jax: eager, jit, aot, donate)"),
    (["run", "--suite-file", TINY, "--suite", "tiny", "--size", "full"],
     "no workload chosen has a 'full' size set (tiny: quick); pick one with --size"),
    (["run", "--min-time", "0"], "--min-time must be a finite number > 0, got '0'"),
    (["run", "--min-time", "-1"], "--min-time must be a finite number > 0, got '-1'"),
    (["run", "--min-time", "nan"], "--min-time must be a finite number > 0, got 'nan'"),
    (["run", "--min-time", "abc"], "--min-time must be a number of seconds, got 'abc'"),
    (["run", "--case-timeout", "0"], "--case-timeout must be a finite number > 0, got '0'"),
    (["run", "--case-timeout", "inf"], "--case-timeout must be a finite number > 0, got 'inf'"),
    (["nightly", "--threshold", "-5"], "--threshold must be a finite number > 0, got '-5'"),
    (["list", "--suite-file", "{d}/missing.py"], "suite file '{d}/missing.py' does not exist"),
    (["list", "--suite-file", "{d}/notes.txt"], "--suite-file '{d}/notes.txt' is not a .py"),
    (["list", "--suite-file", "{d}/raises.py"],
     "--suite-file '{d}/raises.py' failed to import: ZeroDivisionError: division by zero"),
    (["list", "--suite-file", "{d}/syntax.py"],
     "--suite-file '{d}/syntax.py' failed to import: SyntaxError"),
    (["list", "--suite-file", "{d}/empty.py"], "defines no WORKLOAD = jitbench.Workload(...)"),
    (["run", "--suite", "tiny", "--suite-file", TINY, "--out", "{d}/a_file"],
     "--out '{d}/a_file' is a file, not a folder"),
    (["run", "--suite", "tiny", "--suite-file", TINY, "--out", "/proc/jitbench"],
     "--out '/proc/jitbench' cannot be written: No such file or directory"),
    (["run", "--suite", "tiny", "--suite-file", TINY, "--out", "{d}/a_file/sub"],
     "--out '{d}/a_file/sub' cannot be written: Not a directory"),
    (["run", "--suite", "tiny", "--suite-file", TINY, "--reports", "{d}/a_file"],
     "--reports '{d}/a_file' is a file, not a folder"),
    (["run", "--suite", "tiny", "--suite-file", TINY, "--out", "{d}", "--run-id", "../x",
      "--no-report"],
     "run id '../x' cannot name a folder"),
    (["run", "--resume", "{d}/missing"], "RUN_DIR '{d}/missing' does not exist"),
    (["run", "--resume", "{d}/a_file"], "RUN_DIR '{d}/a_file' is not a folder"),
    (["run", "--resume", "{d}/plain_dir"],
     "RUN_DIR '{d}/plain_dir' is not a jitbench run (no meta.json with a run_id in it)"),
    (["run", "--resume", "{d}/bad_meta"], "'{d}/bad_meta/meta.json' is damaged"),
    (["run", "--resume", "{d}/merged"], "RUN_DIR '{d}/merged' has no cases.json"),
    (["run", "--resume", "{d}/merged", "--suite", "mmd", "--min-time", "1"],
     "--resume continues RUN_DIR with its own cases and settings; leave out --suite, "
     "--min-time"),
    (["report", "{d}/missing"], "RUN_DIR '{d}/missing' does not exist"),
    (["report", "{d}/plain_dir"], "'{d}/plain_dir' is not a run folder (no results.jsonl"),
    (["report", "{d}/notes.txt"], "'{d}/notes.txt' is neither a run folder nor a results"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize("args, says", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_input_is_one_line_exit_2_no_traceback(files, args, says):
    args = [a.format(d=files) for a in args]
    out = jitbench(*args, cwd=files)
    lines = out.stderr.splitlines()
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("jitbench"), lines[0]
    assert "Traceback" not in out.stderr
    assert says.format(d=files) in lines[0]
    assert not list(files.rglob("cases.json"))  # no run was started


def test_debug_shows_the_traceback(files):
    out = jitbench("--debug", "list", "--suite", "nope", cwd=files)
    assert out.returncode != 0
    assert "Traceback (most recent call last)" in out.stderr
    assert "UserError: unknown suite 'nope'" in out.stderr
