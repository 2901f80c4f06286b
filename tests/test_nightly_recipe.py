"""The nightly's recipe end to end, as a team runs it (docs/nightly.md, "A recipe to copy"):
`jitbench nightly --environments DIR --requirements FILE` three nights in a row. The two
environments are real virtual environments layered over the test environment (its packages,
this checkout's jitbench) that differ in a real installed distribution, a small wheel built
here: night 1 runs in A with version 1.0; the requirements then ask for 2.0, and night 2 runs
in B (A is left as it was) split over two shards, as a team's CI runs it: B prepared once, each
shard measuring its case group and its side of the A/B (A's interpreter beside B's), the shards
merged and the night judged; night 3 runs in A again, upgraded, and nothing has changed."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

from jitbench.results.files import SUMMARY_NAME

WORKLOAD = Path(__file__).parent / "workloads" / "nightly_small.py"


def _wheel(folder: Path, version: str) -> Path:
    """A pure-Python wheel of the distribution ``tinydep``, written by hand (no build)."""
    path = folder / f"tinydep-{version}-py3-none-any.whl"
    info = f"tinydep-{version}.dist-info"
    files = {"tinydep/__init__.py": f"VERSION = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tinydep\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def _layered_environment(env_dir: Path) -> None:
    """A virtual environment whose own site-packages comes first, then the test
    environment's (its .pth files processed: this checkout's editable jitbench, pip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    (own,) = (env_dir / "lib").glob("python3*/site-packages")
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages())
    (own / "zz_test_environment.pth").write_text(lines)


def _jitbench(*words: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",
                                                            "JITBENCH_TEST_SLOWDOWN")}
    return subprocess.run([sys.executable, "-m", "jitbench", *words], capture_output=True,
                          text=True, env=env, timeout=600, check=False)


def _night(tmp: Path, *words: str) -> subprocess.CompletedProcess:
    return _jitbench(
        "nightly", "--environments", str(tmp / "envs"), "--results", str(tmp / "results"),
        "--reports", str(tmp / "reports"), "--suite-file", str(WORKLOAD), "--suite",
        "nightly_small", "--framework", "jax", "--mode", "jit", "--device", "cpu", "--size",
        "quick", "--budget", "1", "--max-processes", "1", "--no-recheck", "--change-pairs",
        "3",
        # three pairs decide nothing at 10%: this test checks the recipe, not the verdict
        # (nor the first call's: three pairs of it read an inert change 2.19x [1.09, 4.38])
        "--threshold", "1000", "--compile-threshold", "1000", *words)


def test_two_environments_in_turn_three_nights(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for env in ("a", "b"):
        _layered_environment(tmp_path / "envs" / env)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{_wheel(wheels, '1.0')}\n")

    def summary() -> dict:
        return json.loads((tmp_path / "reports" / SUMMARY_NAME).read_text())

    def tinydep(env: str) -> str | None:
        python = tmp_path / "envs" / env / "bin" / "python"
        done = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                               "print(m.version('tinydep'))"], capture_output=True, text=True,
                              check=False)
        return done.stdout.strip() or None

    first = _night(tmp_path, "--requirements", str(requirements))
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert f"tonight in {tmp_path / 'envs' / 'a'}" in first.stdout
    assert tinydep("a") == "1.0" and tinydep("b") is None
    night1 = summary()["latest_run"]
    meta1 = json.loads((tmp_path / "results" / night1 / "meta.json").read_text())
    assert meta1["distributions"]["tinydep"] == "1.0"
    assert meta1["machine"]["executable"] == str(tmp_path / "envs" / "a" / "bin" / "python")

    requirements.write_text(f"{_wheel(wheels, '2.0')}\n")
    prepared = _night(tmp_path, "--requirements", str(requirements), "--prepare")
    assert prepared.returncode == 0, prepared.stdout[-3000:] + prepared.stderr[-3000:]
    assert f"tonight in {tmp_path / 'envs' / 'b'}" in prepared.stdout
    assert tinydep("a") == "1.0" and tinydep("b") == "2.0"  # the last good one as it was
    for k in (1, 2):
        shard = _night(tmp_path, "--shard", f"{k}/2", "--run-id", "night2")
        assert shard.returncode == 0, shard.stdout[-3000:] + shard.stderr[-3000:]
        assert f"tonight in {tmp_path / 'envs' / 'b'}" in shard.stdout
        assert "package tinydep: 1.0 -> 2.0" in shard.stdout
        assert "measured side by side" in shard.stdout
        meta = json.loads((tmp_path / "results" / "shards" / str(k) / "night2"
                           / "meta.json").read_text())
        assert meta["protocol"]["stop_when"] == "precise"  # the nightly's precision
    shards = sorted(str(p) for p in (tmp_path / "results" / "shards").glob("*/night2"))
    merged = _jitbench("merge", *shards, "-o", str(tmp_path / "results" / "night2"))
    assert merged.returncode == 0, merged.stderr[-3000:]
    second = _night(tmp_path, "--no-run")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"tonight in {tmp_path / 'envs' / 'b'}" in second.stdout
    said = summary()
    assert said["latest_run"] == "night2"
    facts = said["change"]
    assert facts["reference"] == night1 and facts["blocked"] is None
    assert any(c.startswith("package tinydep: 1.0 -> 2.0") for c in facts["changes"])
    assert "package tinydep: 1.0 -> 2.0" in said["change_note"]
    # each shard measured its own group side by side; the night judged both together
    assert len(facts["runs"]) == 2 and facts["n_touched"] == 2
    assert sum(facts["verdicts"].values()) == 2
    for run in facts["runs"]:
        ab = json.loads((Path(run) / "meta.json").read_text())["ab"]
        assert ab["arms"]["a"]["python"] == str(tmp_path / "envs" / "a" / "bin" / "python")
        assert ab["arms"]["b"]["python"] == str(tmp_path / "envs" / "b" / "bin" / "python")
        assert ab["rounds"] == 3

    third = _night(tmp_path, "--requirements", str(requirements))
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert f"tonight in {tmp_path / 'envs' / 'a'}" in third.stdout
    assert tinydep("a") == "2.0"
    said = summary()
    assert said["change"]["changes"] == [] and "nothing changed" in said["change_note"]
