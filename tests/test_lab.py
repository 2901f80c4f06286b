"""The lab notebook runs (docs/lab/index.md says how it is laid out).

Each entry is a folder, ``docs/lab/<entry>/``: its page (``index.md``, with a ``Ran at:`` line
naming commits) and its scripts. Every script is cited by a page, imports no sibling script
(shared helpers live in ``docs/lab/labkit/``), and answers ``--help`` against today's jitbench
without starting its experiment: the Python scripts all in ONE child process (TensorFlow and
JAX imported once, not once a script), the shell scripts through ``bash -n``. A script that
needs an older jitbench says so on its first line (``# frozen: needs <commit>; <why>``) and is
skipped here by name."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "docs" / "lab"
KIT = LAB / "labkit"
ENTRIES = sorted(d for d in LAB.iterdir()
                 if d.is_dir() and d != KIT and not d.name.startswith(("_", ".")))
SCRIPTS = sorted(p for d in ENTRIES for p in d.iterdir() if p.suffix in (".py", ".sh"))
PY = [p for p in SCRIPTS if p.suffix == ".py"]
SH = [p for p in SCRIPTS if p.suffix == ".sh"]
FROZEN = re.compile(r"#\s*frozen:\s*needs\s+([0-9a-f]{7,40})\s*;\s*(\S.*)")


def _id(path: Path) -> str:
    return str(path.relative_to(LAB))


def frozen(path: Path) -> str | None:
    """``"needs <commit>; <why>"`` when the script's first line (after a shebang) says it is
    frozen, else None."""
    lines = path.read_text(encoding="utf-8").splitlines()[:2]
    for line in lines:
        m = FROZEN.match(line.strip())
        if m:
            return f"needs {m[1]}; {m[2]}"
    return None


# One child process: each script run as ``python SCRIPT --help`` would run it (``__name__`` is
# "__main__", ``sys.argv`` is [SCRIPT, "--help"]), its exit code and what it printed recorded;
# then every attribute the script reads from a jitbench or labkit module it imported
# (``AW.adapter_for``, ``steps.keras_model``) must still exist there.
_RUNNER = r'''
import ast, contextlib, io, json, sys, time, traceback, types
out, report = {}, sys.argv[1]
for path in sys.argv[2:]:
    rec = out[path] = {"code": None, "printed": "", "error": "", "missing": []}
    g = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    buf, t0 = io.StringIO(), time.perf_counter()
    sys.argv = [path, "--help"]
    src = open(path, encoding="utf-8").read()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(src, path, "exec"), g)
        rec["error"] = "ran to its end on --help (no usage(__doc__) or argparse before its work)"
    except SystemExit as e:
        rec["code"] = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        rec["error"] = traceback.format_exc(limit=-3)
    rec["printed"] = buf.getvalue()[:400]
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = g.get(node.value.id)
            if (isinstance(mod, types.ModuleType)
                    and mod.__name__.split(".")[0] in ("jitbench", "labkit")
                    and not hasattr(mod, node.attr)):
                rec["missing"].append(f"{mod.__name__}.{node.attr} (line {node.lineno})")
json.dump(out, open(report, "w"))
'''


@pytest.fixture(scope="module")
def helped(tmp_path_factory):
    """{script path: what its ``--help`` did}, for every Python script not frozen."""
    report = tmp_path_factory.mktemp("lab") / "help.json"
    runnable = [str(p) for p in PY if not frozen(p)]
    env = {"PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "JAX_PLATFORMS": "cpu",
           "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(report), *runnable],
                          cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0 and report.exists(), done.stderr[-3000:]
    return json.loads(report.read_text())


@pytest.mark.parametrize("script", PY, ids=_id)
def test_a_python_script_answers_help_against_todays_jitbench(script, helped):
    why = frozen(script)
    if why:
        pytest.skip(f"{_id(script)} is frozen: {why}")
    rec = helped[str(script)]
    assert rec["error"] == "", f"{_id(script)}: {rec['error']}"
    assert rec["code"] == 0, f"{_id(script)} --help exited {rec['code']}: {rec['printed']}"
    assert rec["printed"].strip(), f"{_id(script)} --help printed nothing"
    assert rec["missing"] == [], f"{_id(script)} reads names its modules no longer have"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("script", SH, ids=_id)
def test_a_shell_script_parses(script):
    why = frozen(script)
    if why:
        pytest.skip(f"{_id(script)} is frozen: {why}")
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, f"{_id(script)}: {done.stderr}"


def test_the_lab_has_scripts_and_the_test_would_see_a_broken_one(tmp_path):
    """The walk finds the folders' scripts, and the runner fails a script that no longer
    imports (a name gone from jitbench) or runs its experiment on --help."""
    assert len(PY) > 40 and len(SH) > 10 and len(ENTRIES) > 15
    broken = tmp_path / "broken.py"
    broken.write_text('"""x"""\nfrom jitbench.protocol.samples import _take_sample\n')
    runs_anyway = tmp_path / "runs_anyway.py"
    runs_anyway.write_text('"""x"""\nprint("measuring")\n')
    gone = tmp_path / "gone.py"
    gone.write_text('"""x"""\nimport sys\nimport jitbench\nif "--help" in sys.argv:\n'
                    '    print(__doc__)\n    raise SystemExit(0)\njitbench.no_such_name()\n')
    report = tmp_path / "r.json"
    subprocess.run([sys.executable, "-c", _RUNNER, str(report), str(broken), str(runs_anyway),
                    str(gone)], check=True, cwd=ROOT, timeout=60)
    got = json.loads(report.read_text())
    assert "ImportError" in got[str(broken)]["error"]
    assert "ran to its end" in got[str(runs_anyway)]["error"]
    assert got[str(gone)]["code"] == 0
    assert got[str(gone)]["missing"] == ["jitbench.no_such_name (line 7)"]


@pytest.mark.unit
def test_a_frozen_script_is_named_with_the_commit_it_needs(tmp_path):
    s = tmp_path / "old.py"
    s.write_text("# frozen: needs 0d1db0c; reads the row format before schema 9\n")
    assert frozen(s) == "needs 0d1db0c; reads the row format before schema 9"
    s.write_text("#!/usr/bin/env bash\n# frozen: needs abc1234; the old CLI\n")
    assert frozen(s) == "needs abc1234; the old CLI"
    s.write_text('"""# frozen: later in a docstring is not a marker"""\n')
    assert frozen(s) is None


@pytest.mark.unit
@pytest.mark.parametrize("script", SCRIPTS, ids=_id)
def test_every_script_is_cited_by_a_page(script):
    """Its own entry's page names it, or another page names it by its folder."""
    own = (script.parent / "index.md").read_text(encoding="utf-8")
    if re.search(rf"(?<![\w-]){re.escape(script.name)}", own):
        return
    where = f"{script.parent.name}/{script.name}"
    pages = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    assert any(where in p.read_text(encoding="utf-8") for p in pages), \
        f"no page cites {_id(script)}: cite it where its figures are, or delete it"


@pytest.mark.unit
def test_no_script_imports_a_sibling_script():
    """Shared code lives in docs/lab/labkit/, imported by name; a script is never a library."""
    stems = {p.stem for p in PY}
    found = []
    for p in [*PY, *KIT.glob("*.py")]:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [f"{_id(p)} imports {n}" for n in names if n.split(".")[0] in stems]
    assert found == []


def test_every_entry_has_its_page_and_the_commits_it_ran_at():
    hashes = {}
    for d in ENTRIES:
        page = d / "index.md"
        assert page.exists(), f"docs/lab/{d.name}/ has no index.md"
        line = next((ln for ln in page.read_text(encoding="utf-8").splitlines()[:6]
                     if ln.startswith("Ran at:")), None)
        assert line, f"docs/lab/{d.name}/index.md: no 'Ran at:' line under its title"
        hashes[d.name] = re.findall(r"`([0-9a-f]{7,40})`", line)
        assert hashes[d.name], f"docs/lab/{d.name}/index.md: 'Ran at:' names no commit"
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return  # an unpacked archive: the commits cannot be looked up here
    every = sorted({h for hs in hashes.values() for h in hs})
    done = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, capture_output=True,
                          text=True, input="".join(f"{h}^{{commit}}\n" for h in every))
    missing = [ln.split()[0] for ln in done.stdout.splitlines() if ln.endswith("missing")]
    if not (ROOT / ".git" / "shallow").exists():  # a shallow clone lacks the older commits
        assert missing == [], f"'Ran at:' names commits git does not know: {missing}"


@pytest.mark.unit
def test_every_lab_page_is_in_the_sites_navigation():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, tag, node: None)  # mkdocs' !!python tags
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)

    def pages(nav):
        for item in nav:
            for value in (item.values() if isinstance(item, dict) else [item]):
                yield from (pages(value) if isinstance(value, list) else [value])

    in_nav = {p for p in pages(config["nav"]) if p.startswith("lab/")}
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in LAB.rglob("*.md")}
    assert on_disk - in_nav == set(), "lab pages missing from mkdocs.yml's nav"
    assert in_nav - on_disk == set(), "mkdocs.yml's nav names lab pages that do not exist"
    excluded = config.get("exclude_docs") or ""
    assert "lab" not in excluded, "the site links the lab's scripts: it must not exclude them"


@pytest.mark.unit
def test_no_lab_file_holds_a_path_of_one_machine():
    """Scripts take their folders and interpreters as arguments or variables and find the
    repository from their own place; a home folder or an absolute interpreter runs nowhere
    else (scratch folders under /tmp are every machine's)."""
    machine = re.compile(r"(?<![\w$})])/(?:home|Users|root)/\w|(?<![\w$})\"'])/[\w./-]+/\.venv/bin/")
    found = [f"{p.relative_to(ROOT)}: {m[0]}" for p in LAB.rglob("*")
             if p.is_file() and p.suffix in (".py", ".sh", ".md")
             for m in machine.finditer(p.read_text(encoding="utf-8"))]
    assert found == []


@pytest.mark.unit
def test_pooling_reports_a_label_only_some_processes_measured(tmp_path, capsys, monkeypatch):
    """A folder holding processes of two MLP widths (JAX_MLP_HIDDEN) pools each label over the
    files that have it and says so, rather than leaving out the label the first file lacks."""
    import json

    monkeypatch.syspath_prepend(str(LAB))
    from labkit import pooled

    def step(r):
        return {"ratios": {"jit": [r, r * 1.01, r * 0.99]}, "speedup_measure": [2.0, 2.1, 1.9],
                "speedup_loop": [2.0, 2.0, 2.0]}

    (tmp_path / "process-0.json").write_text(json.dumps({"MLP 64": step(1.0)}))
    eager_too = dict(step(1.1), ratios={"jit": [1.1] * 3, "eager": [1.3] * 3})
    (tmp_path / "process-1.json").write_text(json.dumps({"MLP 64": eager_too,
                                                         "MLP 1024": step(1.2)}))
    pooled.report(tmp_path)
    out = capsys.readouterr().out
    assert "2 processes pooled" in out and "\nMLP 64\n" in out
    assert "\nMLP 1024 (1 of the 2 processes measured it)\n" in out
    assert "measure/loop median 1.200 [1.188, 1.212] over 3 rounds" in out
    # ...and a mode only some of a label's processes measured
    assert "eager  measure/loop median 1.300 [1.300, 1.300] over 3 rounds; per process 1.300 " \
           "(1 of 2 processes)" in out
