"""Environments per release (``jitbench.releases.envs``, issue 65 item 1), built for real with a
small package (``packaging``) and without jitbench, so each build takes about a second with uv
and a few with pip: the cache reused, a release that cannot install named and remembered, a
killed build never read as cached, two processes building one release once. The builds that
download a framework, and jitbench installed from its source and refreshed, are in
``test_release_envs_e2e.py``. They need the package registry, as building environments does.

Also here: the adapters on an old release's missing API (item 2), the API taken away from
today's JAX by monkeypatching, and the pure parts (names, the source hash) as unit tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitbench.errors import UserError
from jitbench.releases import envs

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SMALL = "packaging==23.2"
MISSING = "packaging==1.0.0"  # the registry has no such release


def _version(python: Path, module: str = "packaging") -> str:
    return subprocess.run([str(python), "-I", "-c",
                           f"import {module}; print({module}.__version__)"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()


# --------------------------------------------------------------------------- unit

@pytest.mark.unit
def test_the_cache_is_jitbench_envs_else_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("JITBENCH_ENVS", str(tmp_path / "here"))
    assert envs.default_cache() == tmp_path / "here"
    monkeypatch.delenv("JITBENCH_ENVS")
    assert envs.default_cache() == Path.home() / ".cache" / "jitbench" / "envs"


@pytest.mark.unit
def test_names_and_what_the_installer_is_given():
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    assert envs.env_name("jax==0.4.31") == f"jax-0.4.31-{py}"
    assert envs.env_name("packaging==23.2", jitbench=False) == f"packaging-23.2-{py}-bare"
    assert envs.env_name("keras<3.5") != envs.env_name("keras>3.5")
    assert envs.env_name("jax==0.4.31", ["keras<3.5"]) != envs.env_name("jax==0.4.31")
    # a bare jax gets the extra that pins its own jaxlib; the rest as asked
    assert envs.install_spec("jax==0.4.31") == "jax[cpu]==0.4.31"
    assert envs.install_spec("jax[cuda12]==0.4.31") == "jax[cuda12]==0.4.31"
    assert envs.install_spec("tensorflow==2.16.2") == "tensorflow==2.16.2"


@pytest.mark.unit
@given(name=st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,20}[A-Za-z0-9]", fullmatch=True),
       op=st.sampled_from(["==", ">=", "<=", "<", ">", "~=", "!="]),
       version=st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){1,3}", fullmatch=True))
def test_any_requirement_names_one_folder_of_its_own(name, op, version):
    requirement = f"{name}{op}{version}"
    folder = envs.env_name(requirement)
    assert "/" not in folder and folder.strip(".") == folder and len(folder) < 120
    assert folder == envs.env_name(requirement.replace(op, f" {op} "))  # the same release
    if op != "==":
        assert folder != envs.env_name(f"{name}=={version}")


@pytest.mark.unit
@pytest.mark.parametrize("bad", ["jax===", "jax==0.4.31 ; python_version<'3'", "", "jax @ x"])
def test_a_bad_requirement_is_named(bad, tmp_path):
    with pytest.raises(UserError) as caught:
        envs.ensure(bad, tmp_path, jitbench=False)
    assert repr(bad) in str(caught.value) or "not a requirement" in str(caught.value)


@pytest.mark.unit
def test_an_unknown_installer_is_named_with_the_valid_ones(tmp_path):
    with pytest.raises(UserError, match=r"unknown installer 'conda'; valid: uv, pip"):
        envs.ensure(SMALL, tmp_path, jitbench=False, installer="conda")
    with pytest.raises(UserError, match=r"since 'x1' is not a version"):
        envs.releases("jax", since="x1")


@pytest.mark.unit
def test_the_source_hash_follows_the_files_and_nothing_else(tmp_path):
    src = tmp_path / "src"
    (src / "bench" / "__pycache__").mkdir(parents=True)
    (src / "suites").mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        (src / name).write_text(name)
    (src / "bench" / "__init__.py").write_text("A = 1\n")
    first = envs.source_hash(src)
    (src / "bench" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (src / "jitbench.egg-info").mkdir()
    (src / "jitbench.egg-info" / "PKG-INFO").write_text("x")
    (src / "notes.txt").write_text("not part of the wheel")
    assert envs.source_hash(src) == first
    (src / "bench" / "__init__.py").write_text("A = 2\n")
    assert envs.source_hash(src) != first
    (src / "bench" / "__init__.py").write_text("A = 1\n")
    assert envs.source_hash(src) == first
    (src / "suites" / "new.py").write_text("")
    assert envs.source_hash(src) != first


# --------------------------------------------------------------------------- real builds

@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_release_is_built_once_and_reused(tmp_path, installer):
    if installer == "uv" and envs.find_uv() is None:
        pytest.skip("uv is not installed (pip install 'jitbench[releases]')")
    lines: list[str] = []
    built = envs.ensure(SMALL, tmp_path, jitbench=False, installer=installer,
                        log=lines.append)
    assert built.ok and not built.reused and built.error is None
    assert built.installer == installer
    assert built.path == tmp_path / envs.env_name(SMALL, jitbench=False)
    assert built.python == built.path / "bin" / "python"
    assert built.versions["packaging"] == "23.2" and "jitbench" not in built.versions
    assert _version(built.python) == "23.2"
    # the folder was renamed into place after its build: its scripts name where it is now
    pip = built.path / "bin" / "pip"
    assert subprocess.run([str(pip), "--version"], capture_output=True, text=True,
                          timeout=60).stdout.count(str(built.path)) == 1
    assert not list(tmp_path.glob(".building-*"))

    started = time.perf_counter()
    again = envs.ensure(SMALL, tmp_path, jitbench=False, installer=installer,
                        log=lines.append)
    assert time.perf_counter() - started < 0.5
    assert again.reused and again.python == built.python and again.versions == built.versions
    assert lines[-1] == f"{SMALL}: reusing {built.path}"


def test_a_release_that_cannot_install_is_named_remembered_and_retried_on_request(tmp_path):
    failed = envs.ensure(MISSING, tmp_path, jitbench=False)
    assert failed.python is None and not failed.ok and not failed.reused
    assert failed.error.startswith(f"{failed.installer} install {MISSING} exited 1")
    assert "1.0.0" in failed.error.split("\n", 1)[1]  # the installer's own words
    assert not failed.path.exists() and not list(tmp_path.glob(".building-*"))
    remembered = json.loads((tmp_path / f"{failed.path.name}.failed").read_text())
    assert remembered["error"] == failed.error

    started = time.perf_counter()
    again = envs.ensure(MISSING, tmp_path, jitbench=False)
    assert time.perf_counter() - started < 0.5
    assert again.reused and again.python is None and again.error == failed.error

    retried = envs.ensure(MISSING, tmp_path, jitbench=False, retry=True)
    assert not retried.reused and retried.python is None
    # a ladder goes on without it: the others are built
    results = envs.ensure_all([MISSING, SMALL], tmp_path, jitbench=False)
    assert [r.ok for r in results] == [False, True]


_KILLED = """
import os, signal, sys
from jitbench.releases import envs

def killed(*args, **kw):  # everything installed, its check not yet passed: killed there
    os.kill(os.getpid(), signal.SIGKILL)

envs._check = killed
envs.ensure(sys.argv[1], sys.argv[2], jitbench=False)
"""


def test_a_killed_build_is_never_read_as_cached(tmp_path):
    done = subprocess.run([sys.executable, "-c", _KILLED, SMALL, str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -9, done.stderr
    name = envs.env_name(SMALL, jitbench=False)
    left = list(tmp_path.glob(f".building-{name}-*"))
    assert len(left) == 1 and (left[0] / "bin" / "python").exists()  # installed, not checked
    assert not (tmp_path / name).exists()

    # a folder of that name without the marker (copied in, half removed) is no environment
    (tmp_path / name).mkdir()
    rebuilt = envs.ensure(SMALL, tmp_path, jitbench=False)
    assert rebuilt.ok and not rebuilt.reused and _version(rebuilt.python) == "23.2"
    assert not list(tmp_path.glob(".building-*"))  # what the killed build left is gone


_RACE = """
import json, sys
from jitbench.releases import envs
env = envs.ensure(sys.argv[1], sys.argv[2], jitbench=False)
print(json.dumps([env.reused, str(env.python)]))
"""


def test_two_processes_asking_for_one_release_build_it_once(tmp_path):
    children = [subprocess.Popen([sys.executable, "-c", _RACE, SMALL, str(tmp_path)],
                                 stdout=subprocess.PIPE, text=True) for _ in range(2)]
    said = [json.loads(child.communicate(timeout=300)[0]) for child in children]
    assert sorted(reused for reused, _ in said) == [False, True]
    assert said[0][1] == said[1][1] and _version(Path(said[0][1])) == "23.2"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) \
        == [envs.env_name(SMALL, jitbench=False)]


def test_the_registrys_releases_oldest_first_between_bounds():
    assert envs.releases("packaging", since="22.0", until="23.2") == ["22.0", "23.0", "23.1",
                                                                       "23.2"]
    with pytest.raises(UserError, match="no-such-package-jitbench-"):
        envs.releases("no-such-package-jitbench-test")


# --------------------------------------------------------------------------- an old release's API

def test_jax_without_compiled_out_info_still_captures_each_stages_program(monkeypatch):
    """JAX 0.4.30 (the oldest jitbench allows) has no ``Compiled.out_info``: the HLO of a
    two-stage function is still captured, the second stage lowered on the first's output
    shapes, as on today's JAX."""
    jax = pytest.importorskip("jax")
    import numpy as np
    from jitbench.frameworks.jax_adapter import Adapter

    def double(x):
        return x * 2.0

    def total(y):
        return y.sum(axis=0)

    adapter = Adapter(own_process=False)
    placed = adapter.place([np.ones((4, 3), np.float32)], "cpu")
    today = adapter.compiled_programs([double, total], "jit", "cpu", placed)
    monkeypatch.delattr(jax.stages.Compiled, "out_info", raising=False)
    assert not hasattr(jax.jit(double).lower(*placed).compile(), "out_info")
    old = adapter.compiled_programs([double, total], "jit", "cpu", placed)
    assert [p.name for p in old] == ["0-double", "1-total"]
    # the same programs (their first line: the entry's layout; the rest names the caller)
    assert [p.hlo.splitlines()[0] for p in old] == [p.hlo.splitlines()[0] for p in today]
    assert "entry_computation_layout={(f32[4,3]{1,0})->f32[3]{0}}" in old[1].hlo
