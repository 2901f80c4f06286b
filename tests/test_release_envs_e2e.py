"""Environments per release with real frameworks (issue 65, items 1 and 2), end to end: the
oldest releases jitbench declares (pyproject.toml: jax>=0.4.30, tensorflow>=2.16) built by
``jitbench.releases.envs`` with the same jitbench installed from a copy of its source, every
mode of a run there ``ok``, and jitbench alone reinstalled when its source changes. The newest
releases are what the development environment holds, where the rest of the tests run.

They download the frameworks the first time (uv keeps them in its cache afterwards):
``JITBENCH_ENVS=DIR`` keeps the environments between sessions, otherwise they are built in a
temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from jitbench import load_results
from jitbench.releases import envs

ROOT = Path(__file__).resolve().parent.parent
OLDEST_JAX = "jax==0.4.30"
OLDEST_TF = "tensorflow==2.16.2"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    given = os.environ.get("JITBENCH_ENVS")
    return Path(given) if given else tmp_path_factory.mktemp("envs")


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of jitbench's source, to change without touching the checkout."""
    copy = tmp_path_factory.mktemp("jitbench-src")
    for part in envs.SOURCE_PARTS:
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, copy / part,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / part, copy / part)
    return copy


def _run(python: Path, out: Path, *args: str):
    """The rows of a ``jitbench run`` in the environment, from outside the checkout (its
    jitbench is the installed one)."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(python), "-m", "jitbench", "run", "--device", "cpu", "--size",
                           "quick", "--no-report", "--no-calibrate", "--precision", "off",
                           "--min-time", "0.05", "--out", str(out), *args],
                          cwd=out, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = [p.parent for p in out.glob("*/results.jsonl")]
    return load_results(run)


def _installed_jitbench(python: Path) -> list[str]:
    done = subprocess.run([str(python), "-I", "-c", "import jitbench; print(jitbench.__file__);"
                           "print(getattr(jitbench, 'RELEASE_ENVS_MARK', None))"],
                          capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.split()


def test_the_oldest_jax_runs_every_mode_and_its_programs_are_captured(cache, source, tmp_path):
    env = envs.ensure(OLDEST_JAX, cache, source=source)
    assert env.ok, env.error
    assert env.versions["jax"] == env.versions["jaxlib"] == "0.4.30"
    assert env.jitbench_hash == envs.source_hash(source)
    where, _ = _installed_jitbench(env.python)
    assert Path(where).is_relative_to(env.path)  # installed, not the checkout's

    rows = _run(env.python, tmp_path, "--framework", "jax", "--suite",
                "matmul_relu,train_step", "--dtype", "float32")
    assert set(rows["mode"]) == {"eager", "jit", "aot", "donate"}
    assert set(rows["status"]) == {"ok"}, rows[rows.status != "ok"][["mode", "error"]]
    assert (rows["first_compiles"] > 0).all()  # jax.monitoring's compile events there too
    # each JIT mode's program captured (0.4.30 has no Compiled.out_info)
    captured = rows[(rows.workload == "matmul_relu") & rows["mode"].isin(["jit", "aot"])]
    assert not captured["hlo_note"].fillna("").str.contains("could not").any()


def test_a_changed_jitbench_is_reinstalled_alone(cache, source):
    env = envs.ensure(OLDEST_JAX, cache, source=source)
    jax_file = next(env.path.glob("lib/python*/site-packages/jax/__init__.py"))
    before = jax_file.stat().st_mtime_ns
    init = source / "bench" / "__init__.py"
    init.write_text(init.read_text() + "\nRELEASE_ENVS_MARK = 'changed'\n")

    started = time.perf_counter()
    again = envs.ensure(OLDEST_JAX, cache, source=source)
    assert time.perf_counter() - started < 120
    assert again.ok and again.reused and again.path == env.path
    assert again.jitbench_hash == envs.source_hash(source) != env.jitbench_hash
    assert _installed_jitbench(again.python)[1] == "changed"
    assert jax_file.stat().st_mtime_ns == before  # the release itself untouched
    assert envs.ensure(OLDEST_JAX, cache, source=source).jitbench_hash == again.jitbench_hash


def test_the_oldest_tensorflow_runs_every_mode(cache, source, tmp_path):
    env = envs.ensure(OLDEST_TF, cache, source=source)
    assert env.ok, env.error
    assert env.versions["tensorflow"] == "2.16.2" and "keras" in env.versions
    rows = _run(env.python, tmp_path, "--framework", "tf", "--suite",
                "matmul_relu,train_step", "--dtype", "float32")
    assert set(rows["mode"]) == {"eager", "graph", "xla", "autoclustering"}
    assert set(rows["status"]) == {"ok"}, rows[rows.status != "ok"][["mode", "error"]]
