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
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitbench.errors import UserError
from jitbench.releases import envs, installers

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
def test_an_extra_of_the_package_is_an_environment_of_its_own():
    """``jitbench releases --extra cuda12`` asks for jax[cuda12]==V: installed as asked, in
    an environment of its own; jax[cpu]==V is what a bare jax==V installs, so it is that one."""
    from jitbench.cli.releases import requirement

    assert requirement("jax", "0.4.31", "cuda12") == "jax[cuda12]==0.4.31"
    assert requirement("jax", "0.4.31") == "jax==0.4.31"
    names = {r: envs.env_name(r) for r in ("jax==0.4.31", "jax[cuda12]==0.4.31",
                                           "jax[cuda13]==0.4.31", "jax[cuda12]==0.4.33")}
    assert len(set(names.values())) == 4, names
    assert "cuda12" in names["jax[cuda12]==0.4.31"] and "0.4.31" in names["jax[cuda12]==0.4.31"]
    assert envs.env_name("jax[cpu]==0.4.31") == envs.env_name("jax==0.4.31")
    assert envs.env_name("jax[CPU]==0.4.31") == envs.env_name("jax==0.4.31")
    assert envs.install_spec("jax[cuda12]==0.4.31") == "jax[cuda12]==0.4.31"
    assert envs.env_name("tensorflow[and-cuda]==2.16.2") != envs.env_name("tensorflow==2.16.2")


def test_an_extra_the_release_does_not_declare_fails_its_environment_naming_the_valid_ones():
    """An installer only warns about an extra the release does not know (and builds without
    it): the import check names it with the extras the release declares. Checked on this
    environment's own jax (no build)."""
    from packaging.requirements import Requirement

    pytest.importorskip("jax")
    versions, error, passing = envs._check(Path(sys.executable), Requirement("jax[cuda99]"),
                                           jitbench=False)
    assert versions is None and not passing
    assert "declares no extra 'cuda99' (its extras: " in error and "cpu" in error, error
    versions, error, _ = envs._check(Path(sys.executable), Requirement("jax[cpu]"),
                                     jitbench=False)
    assert error is None and versions["jax"]


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
from jitbench.releases import envs, installers

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
from jitbench.releases import envs, installers
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


# --------------------------------------------------------------------------- review findings

def _tiny_source(root: Path, requires: tuple[str, ...] = (), mark: str = "1") -> Path:
    """A jitbench source tree of a few lines (SOURCE_PARTS, setup.py's mapping): its wheel
    builds in a second, and its declared requirements are the test's to change."""
    (root / "bench").mkdir(parents=True, exist_ok=True)
    (root / "suites").mkdir(exist_ok=True)
    (root / "bench" / "__init__.py").write_text(f"MARK = {mark!r}\n")
    (root / "suites" / "__init__.py").write_text("")
    (root / "README.md").write_text("tiny\n")
    (root / "setup.py").write_text(
        "from setuptools import setup\n"
        "setup(packages=['jitbench', 'jitbench.suites'],\n"
        "      package_dir={'jitbench': 'bench', 'jitbench.suites': 'suites'})\n")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "jitbench"\nversion = "0.0.1"\nreadme = "README.md"\n'
        f"dependencies = {json.dumps(list(requires))}\n")
    return root


def _imports(python: Path, module: str) -> bool:
    return subprocess.run([str(python), "-I", "-c", f"import {module}"], check=False,
                          capture_output=True, timeout=60).returncode == 0


@pytest.mark.parametrize("how", ["dangling", "does-not-run"])
def test_an_environment_whose_interpreter_is_gone_is_rebuilt(tmp_path, how):
    """A patch upgrade of the base Python (3.11.7 -> 3.11.9) leaves the environment's
    bin/python pointing at nothing; the folder and its marker are still there."""
    lines: list[str] = []
    built = envs.ensure(SMALL, tmp_path / "envs", jitbench=False, log=lines.append)
    assert built.ok
    built.python.unlink()
    if how == "dangling":
        built.python.symlink_to(tmp_path / "pyenv" / "3.11.7" / "bin" / "python3.11")
    else:
        built.python.write_text("#!/bin/sh\nexit 1\n")
        built.python.chmod(0o755)
    again = envs.ensure(SMALL, tmp_path / "envs", jitbench=False, log=lines.append)
    assert again.ok and not again.reused and again.python == built.python
    assert _version(again.python) == "23.2"
    assert any("no longer runs" in line and "rebuilding" in line for line in lines), lines
    assert envs.ensure(SMALL, tmp_path / "envs", jitbench=False).reused


@pytest.mark.unit
def test_a_kill_a_timeout_or_the_network_is_no_property_of_the_release():
    def done(code: int, err: str = "") -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(["x"], code, "", err)

    assert envs.transient(None)  # ran out of time (or could not start)
    assert envs.transient(done(-9)) and envs.transient(done(-15))  # the OOM killer, a kill
    assert envs.transient(done(2, "error: Failed to fetch: https://pypi.org/simple/jax/\n"
                                  "  cause: tcp connect error\n  cause: Connection refused"))
    assert envs.transient(done(1, "WARNING: Retrying (Retry(total=0)) after connection broken "
                                  "by 'NewConnectionError(...: Temporary failure in name "
                                  "resolution')"))
    # the release's own: remembered
    assert not envs.transient(done(1, "ERROR: Could not find a version that satisfies the "
                                      "requirement jax==0.1 (from versions: 0.4.30)"))
    assert not envs.transient(done(1, "ModuleNotFoundError: No module named 'jax'"))
    assert not envs.transient(done(-11))  # a crash on import (SIGSEGV) happens every time
    assert not envs.transient(done(0))


def test_a_timeout_or_a_network_error_is_not_remembered(tmp_path, monkeypatch):
    if envs.find_uv() is None:
        pytest.skip("uv is not installed (pip install 'jitbench[releases]')")
    lines: list[str] = []
    name = envs.env_name(SMALL, jitbench=False)
    # nothing listens on port 9: the index cannot be reached
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    offline = envs.ensure(SMALL, tmp_path, jitbench=False, installer="uv", log=lines.append)
    assert not offline.ok and "127.0.0.1:9" in offline.error
    assert not (tmp_path / f"{name}.failed").exists()
    assert "not remembered" in lines[-1]
    monkeypatch.delenv("UV_INDEX_URL")
    monkeypatch.setattr(envs, "INSTALL_TIMEOUT_S", 0.001)
    late = envs.ensure(SMALL, tmp_path, jitbench=False, installer="uv")
    assert not late.ok and "ran out of time" in late.error and not late.reused
    assert not (tmp_path / f"{name}.failed").exists()
    monkeypatch.undo()
    assert envs.ensure(SMALL, tmp_path, jitbench=False, installer="uv").ok  # tried again


def test_a_failure_is_remembered_for_its_installer_and_jitbench_only(tmp_path):
    if envs.find_uv() is None:
        pytest.skip("uv is not installed (pip install 'jitbench[releases]')")
    source = _tiny_source(tmp_path / "src")
    cache = tmp_path / "envs"
    failed = envs.ensure(MISSING, cache, installer="uv", source=source)
    assert not failed.ok and not failed.reused
    remembered = json.loads((cache / f"{failed.path.name}.failed").read_text())
    assert remembered["installer"] == "uv"
    assert remembered["jitbench_hash"] == envs.source_hash(source)
    assert envs.ensure(MISSING, cache, installer="uv", source=source).reused
    # another jitbench, or another installer, may well install it: tried again
    _tiny_source(source, mark="2")
    lines: list[str] = []
    assert not envs.ensure(MISSING, cache, installer="uv", source=source,
                           log=lines.append).reused
    assert any("jitbench changed since, trying again" in line for line in lines), lines
    assert envs.ensure(MISSING, cache, installer="uv", source=source).reused
    other = envs.ensure(MISSING, cache, installer="pip", source=source, log=lines.append)
    assert not other.ok and not other.reused and other.installer == "pip"
    assert any("failed before with uv" in line and "installer changed" in line
               for line in lines), lines


@pytest.mark.unit
def test_a_cache_that_cannot_be_made_is_named(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for where, why in ((a_file, "is a file"), (a_file / "below", "Not a directory")):
        with pytest.raises(UserError, match=f"cache .*{where}.*{why}"):
            envs.ensure(SMALL, where, jitbench=False)
    if Path("/proc/self").exists():
        with pytest.raises(UserError, match="/proc/x"):
            envs.ensure(SMALL, "/proc/x", jitbench=False)


def test_a_dependency_jitbench_gained_is_installed_when_it_is_refreshed(tmp_path):
    if envs.find_uv() is None:
        pytest.skip("uv is not installed (pip install 'jitbench[releases]')")
    source = _tiny_source(tmp_path / "src")
    cache = tmp_path / "envs"
    built = envs.ensure(SMALL, cache, source=source)
    assert built.ok and not _imports(built.python, "iniconfig")
    assert json.loads((built.path / envs.MARKER).read_text())["jitbench_requires"] == []

    _tiny_source(source, requires=("iniconfig==2.0.0",))
    lines: list[str] = []
    grown = envs.ensure(SMALL, cache, source=source, log=lines.append)
    assert grown.ok and grown.jitbench_hash == envs.source_hash(source), grown.error
    assert _imports(grown.python, "iniconfig") and _version(grown.python) == "23.2"
    assert "with its dependencies" in lines[-1]
    assert json.loads((built.path / envs.MARKER).read_text())["jitbench_requires"] \
        == ["iniconfig==2.0.0"]

    # the same requirements: jitbench alone; and a dependency gone is caught by the check
    subprocess.run([envs.find_uv(), "pip", "uninstall", "--quiet", "--python",
                    str(grown.python), "iniconfig"], check=True, timeout=60)
    _tiny_source(source, requires=("iniconfig==2.0.0",), mark="3")
    lines.clear()
    broken = envs.ensure(SMALL, cache, source=source, log=lines.append)
    assert "reinstalling it alone" in lines[-1]
    assert not broken.ok and "iniconfig" in broken.error


def test_without_pip_the_wheel_is_built_by_uv_and_the_registry_says_why(tmp_path, monkeypatch):
    if envs.find_uv() is None:
        pytest.skip("uv is not installed (pip install 'jitbench[releases]')")
    source = _tiny_source(tmp_path / "src")
    monkeypatch.setattr(installers, "has_pip", lambda: False)
    wheel = envs._wheel(source, tmp_path / "envs", envs.source_hash(source), lambda line: None)
    assert wheel.name.startswith("jitbench-0.0.1-") and wheel.suffix == ".whl"
    with pytest.raises(UserError, match=r"pip is not installed in .*python"):
        envs.releases("packaging")
    monkeypatch.setattr(installers, "find_uv", lambda: None)
    with pytest.raises(UserError, match=r"pip is not installed in .*python.*uv"):
        envs._wheel(source, tmp_path / "other", "0123", lambda line: None)


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
