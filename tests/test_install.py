"""Installed, jitbench is ``jitbench`` and ``jitbench.suites``: a project with its own ``bench``
and ``suites`` packages keeps them, and ``jit_benchmark`` works there under ``pytest`` and
``python -m pytest``, with jitbench installed as a regular package (``pip install``, here into
a ``--target`` folder) and as this environment's editable one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROJECT = {
    "pyproject.toml": """
        [tool.pytest.ini_options]
        pythonpath = ["."]
        """,
    "bench/__init__.py": "",
    "bench/util.py": """
        def helper():
            return "the project's own bench"
        """,
    "suites/__init__.py": """
        MARK = "the project's own suites"
        """,
    "tests/test_project.py": """
        import numpy as np
        import suites
        from bench.util import helper


        def scaled_tanh(x):
            import jax.numpy as jnp

            return jnp.tanh(x) * 2.0


        def test_the_projects_own_packages():
            assert helper() == "the project's own bench"
            assert suites.MARK == "the project's own suites"


        def test_jit_benchmark(jit_benchmark):
            import jax.numpy as jnp

            jit_benchmark(scaled_tanh, jnp.asarray(np.ones(8, np.float32)),
                          modes=["eager", "jit"], precision="off")
        """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """jitbench installed as a regular package (not editable) into a folder of its own."""
    import shutil

    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    # a copy of what a source distribution holds: the build leaves the repository as it was
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("bench", "suites"):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    import importlib.util

    # this environment's setuptools builds it where it has one (no download); else pip's own
    isolation = [] if importlib.util.find_spec("setuptools") is None \
        else ["--no-build-isolation"]
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           *isolation, "--no-compile", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TMPDIR=str(build)))
    assert done.returncode == 0, done.stderr[-2000:]
    return target


def test_a_regular_install_names_no_generic_package(installed):
    tops = {p.name for p in installed.iterdir() if p.is_dir() and "." not in p.name}
    assert "jitbench" in tops and not tops & {"bench", "suites"}, tops
    assert (installed / "jitbench" / "suites" / "mmd.py").is_file()
    assert (installed / "jitbench" / "report" / "templates").is_dir()


@pytest.mark.e2e  # a user's project and its pytest, each run in a process of its own
@pytest.mark.parametrize("install", ["regular", "editable"])
@pytest.mark.parametrize("command", [["pytest"], [sys.executable, "-m", "pytest"]],
                         ids=["pytest", "python -m pytest"])
def test_a_project_with_its_own_bench_and_suites(project, installed, install, command):
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTHONPATH", None)
    if install == "regular":
        env["PYTHONPATH"] = str(installed)  # found before this environment's editable copy
    if command == ["pytest"]:
        command = [str(Path(sys.executable).parent / "pytest")]
    done = subprocess.run([*command, "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
    where = subprocess.run([sys.executable, "-c", "import jitbench; print(jitbench.__file__)"],
                           cwd=project, capture_output=True, text=True, env=env, check=True)
    expected = installed if install == "regular" else ROOT
    assert Path(where.stdout.strip()).is_relative_to(expected), where.stdout


HIDE_TF = '''
import sys


class HideTensorFlow:
    """This interpreter as one where TensorFlow was never installed."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "tf_keras"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, HideTensorFlow)
'''


@pytest.mark.e2e
def test_with_jax_only_the_tensorflow_cases_are_skipped_with_the_install_command(tmp_path):
    """`pip install -e ".[jax]"`, as a JAX user installs it: an interpreter that reuses this
    environment's packages but cannot import TensorFlow."""
    import json
    import sysconfig

    venv = tmp_path / "jax-only"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    purelib = sysconfig.get_paths()["purelib"]
    (site / "hide_tf.py").write_text(HIDE_TF)
    (site / "hide.pth").write_text("import hide_tf\n")
    (site / "reuse.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", "import tensorflow"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'tensorflow'" in probe.stderr
    done = subprocess.run([python, "-m", "jitbench", "run", "--suite", "matmul_relu",
                           "--variant", "fused", "--size", "quick", "--device", "cpu",
                           "--budget", "0.3", "--no-report", "--no-calibrate",
                           "--out", str(tmp_path / "results")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=""))
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = next((tmp_path / "results").iterdir())
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    by = {(r["framework"], r["status"]) for r in rows}
    assert by == {("jax", "ok"), ("tf", "skipped")}, by
    tf = [r for r in rows if r["framework"] == "tf"]
    assert all('pip install "jitbench[tf]"' in r["error"] for r in tf), tf[0]["error"]
    assert "TensorFlow is not installed" in tf[0]["error"]
