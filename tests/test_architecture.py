"""The architecture, checked: import-linter's contracts (pyproject.toml), no import cycle inside
``bench``, no module over 600 lines (a guard against monsters; modules split by job; 450 in
``userfn``, split by what users pass), and mode names only where frameworks declare them."""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"  # installed as the package jitbench
SUITES = ROOT / "suites"  # installed as jitbench.suites
# a guard against monsters, not a shape for modules: split a module by job, never by count
MAX_LINES = 600


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once for every test here (none changes it)."""
    return ast.parse(path.read_text())


@functools.lru_cache(maxsize=None)
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a source file's tree (``ast.walk``), listed once."""
    return tuple(ast.walk(_tree(path)))


def test_import_linter_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.fail(f"{lint} is missing: install the dev extra (pip install -e '.[dev]')")
    # the suites folder as the top-level package "suites", so its imports are checked too
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (
        str(ROOT), os.environ.get("PYTHONPATH")))))
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    # the message names the broken contract and the import that breaks it
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(
                        child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _parents_of(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


@pytest.mark.unit
def test_no_import_cycles_inside_bench():
    graph = grimp.build_graph("jitbench")
    # a package importing its own submodules (its __init__ re-exporting them) is no cycle
    cycles = []
    for comp in _cycles(graph):
        rest = [m for m in comp if not any(m in _parents_of(o) for o in comp)]
        if len(rest) > 1:
            cycles.append(comp)
    assert cycles == [], f"import cycles in bench: {cycles}"


@pytest.mark.unit
def test_cycle_finder_finds_a_cycle():
    class Fake:
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges.get(m, set())

    assert _cycles(Fake()) == [["a", "b", "c"]]


@pytest.mark.unit
def test_no_module_is_a_monster():
    long = {str(p.relative_to(ROOT)): n for p in [*BENCH.rglob("*.py"), *SUITES.rglob("*.py")]
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.unit
def test_mode_names_live_only_in_the_declarations():
    from jitbench.define.modes import MODES
    from jitbench.results.files import COLUMNS

    # "jit" is also the row's column saying whether JIT was on: that use is not a mode name
    names = {m.name for m in MODES.values()} - set(COLUMNS)
    allowed = {BENCH / "define" / "modes.py"} | set((BENCH / "frameworks").glob("*.py"))
    offenders = []
    for path in BENCH.rglob("*.py"):
        if path in allowed:
            continue
        for node in _nodes(path):
            if isinstance(node, ast.Constant) and node.value in names:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert offenders == [], "mode names outside the declarations:\n" + "\n".join(offenders)


def _layer_packages() -> list[str]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    return [name.strip() for layer in layers for name in layer.replace("|", ":").split(":")]


@pytest.mark.unit
def test_every_module_lies_in_a_layer():
    """A new module outside every layer of the import contract would be free to import
    anything: each module of bench must be one of the layers' packages or inside one."""
    packages = _layer_packages()
    face = {"jitbench"}  # the package's face: __init__ re-exports, imports nothing heavy
    loose = sorted(m for m in grimp.build_graph("jitbench").modules
                   if m not in face and not any(m == p or m.startswith(p + ".")
                                                for p in packages))
    assert loose == [], f"modules in no import-linter layer (pyproject.toml): {loose}"


@pytest.mark.unit
def test_the_top_of_bench_is_its_face_and_packages_by_job():
    top = sorted(p.name for p in BENCH.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "errors.py"], top


@pytest.mark.unit
def test_no_module_imports_another_modules_private_names():
    """A helper shared across modules is public in the module that owns it."""
    private = []
    for path in [*BENCH.rglob("*.py"), *SUITES.rglob("*.py")]:
        for node in _nodes(path):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jitbench"):
                private += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}"
                            for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert private == [], private


def _changes_a_meta(node: ast.AST) -> bool:
    """An assignment into, or a mutating call on, something named ``meta`` or ``*_meta``
    (``meta["x"] = ...``, ``ex.meta.update(...)``, ``meta.setdefault(...)``)."""
    def is_meta(name: str) -> bool:  # ``metas``: a list of them, not one
        return "meta" in name and not name.endswith("metas")

    def named_meta(expr) -> bool:
        while isinstance(expr, (ast.Subscript, ast.Attribute)):
            if isinstance(expr, ast.Attribute) and is_meta(expr.attr):
                return True
            expr = expr.value
        return isinstance(expr, ast.Name) and is_meta(expr.id)

    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Subscript) and named_meta(t.value) for t in targets)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return (node.func.attr in ("update", "setdefault", "pop", "append", "clear")
                and named_meta(node.func.value))
    return False


@pytest.mark.unit
def test_nothing_outside_results_changes_a_runs_meta():
    """jitbench.results.record.RunRecord owns a run's meta.json; everything else reads it."""
    offenders = []
    for path in BENCH.rglob("*.py"):
        if path.is_relative_to(BENCH / "results"):
            continue
        for node in _nodes(path):
            if _changes_a_meta(node):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], offenders
    # the check itself sees such a change
    assert _changes_a_meta(ast.parse('meta["calibration"] = 1').body[0])
    assert _changes_a_meta(ast.parse("ex.meta.update(a=1)").body[0].value)


def _modules_where(predicate) -> list[str]:
    """The modules of ``bench`` with a node for which ``predicate(node)`` holds."""
    return sorted({str(path.relative_to(BENCH)) for path in BENCH.rglob("*.py")
                   if any(predicate(n) for n in _nodes(path))})


def _call_named(node, name: str) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == name)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == name))


@pytest.mark.unit
def test_one_module_makes_loops_of_workers_and_one_package_starts_processes():
    """Every kind of run gets its loop of workers from ``jitbench.run.groups.open_loop``, and
    every child process starts in ``jitbench.launch``."""
    assert _modules_where(lambda n: _call_named(n, "GroupLoop")) == ["run/groups.py"]

    def imports_subprocess(n) -> bool:
        return ((isinstance(n, ast.Import) and any(a.name == "subprocess" for a in n.names))
                or (isinstance(n, ast.ImportFrom) and n.module == "subprocess"))

    assert _modules_where(imports_subprocess) == ["launch/__init__.py"]


@pytest.mark.unit
def test_rows_reach_files_through_the_results_package_only():
    """No ``json.dumps`` written straight to a file outside ``jitbench.results`` (a NaN would
    make invalid JSON; ``jitbench.results.files.encode`` writes it as null); the JSON lines
    between a worker and its parent are ``jitbench.run.wire``'s (Python reads its own NaN
    back)."""
    def dumps_into_a_write(n) -> bool:
        return (any(_call_named(n, w) for w in ("write", "writelines", "write_text"))
                and any(_call_named(a, "dumps") for a in ast.walk(n) if a is not n))

    found = [m for m in _modules_where(dumps_into_a_write) if not m.startswith("results/")]
    assert found == [], found


def _json_writers(tree: ast.AST) -> int:
    """How many functions of a module write JSON to a file: ``json.dump``, or ``json.dumps`` in
    a function that also writes a file, however the two are spelled (``json.dumps``, ``from
    json import dumps as d``, ``d = json.dumps``, the text bound to a name before the write)."""
    def is_json(expr) -> str | None:
        if (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)
                and expr.value.id == "json" and expr.attr in ("dump", "dumps")):
            return expr.attr
        return None

    aliases: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module == "json":
            aliases.update({a.asname or a.name: a.name for a in n.names
                            if a.name in ("dump", "dumps")})
        if isinstance(n, ast.Assign) and (kind := is_json(n.value)):
            aliases.update({t.id: kind for t in n.targets if isinstance(t, ast.Name)})

    def kind(call) -> str | None:
        if not isinstance(call, ast.Call):
            return None
        if isinstance(call.func, ast.Name):
            return aliases.get(call.func.id)
        return is_json(call.func)

    def own_nodes(fn):  # a function's nodes, nested functions left to themselves
        todo = list(ast.iter_child_nodes(fn))
        while todo:
            n = todo.pop()
            yield n
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(n))

    count = 0
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        kinds = {kind(n) for n in own_nodes(fn)}
        write = any(_call_named(n, w) for n in own_nodes(fn)
                    for w in ("write", "writelines", "write_text", "write_bytes"))
        count += "dump" in kinds or ("dumps" in kinds and write)
    return count


@pytest.mark.unit
def test_no_json_file_is_written_outside_the_results_package_however_it_is_spelled():
    """Only ``jitbench.results`` writes result, summary and meta files as JSON; the wire format
    between a worker and its parent is ``jitbench.run.wire``'s (which writes no file)."""
    found = sorted(str(p.relative_to(BENCH)) for p in BENCH.rglob("*.py")
                   if _json_writers(_tree(p)))
    assert [m for m in found if not m.startswith("results/")] == []
    # the spellings it sees
    assert _json_writers(ast.parse("import json\ndef f(p, x):\n    json.dump(x, p)")) == 1
    assert _json_writers(ast.parse(
        "from json import dumps as d\ndef f(p, x):\n    t = d(x)\n    p.write_text(t)")) == 1
    assert _json_writers(ast.parse(
        "import json\nenc = json.dumps\ndef f(p, x):\n    p.write_bytes(enc(x).encode())")) == 1
    assert _json_writers(ast.parse(
        "import pickle\ndef f(p, x):\n    p.write_bytes(pickle.dumps(x))")) == 0


@pytest.mark.unit
def test_the_nightly_lives_in_rooms_of_at_most_400_lines():
    long = {p.name: n for p in (BENCH / "nightly").glob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}, long


@pytest.mark.unit
def test_the_user_function_room_is_split_by_what_users_pass_in_modules_of_at_most_450_lines():
    """``jitbench.userfn``: a plain or jitted function, a stateful step, a Keras model and its
    ``fit``, the run as a workload and the options each in a module of its own."""
    modules = {p.name: len(p.read_text().splitlines()) for p in (BENCH / "userfn").glob("*.py")}
    assert {"functions.py", "stateful.py", "keras_model.py", "keras_fit.py", "as_workload.py",
            "options.py"} <= set(modules), sorted(modules)
    assert {name: n for name, n in modules.items() if n > 450} == {}


@pytest.mark.unit
def test_every_kind_of_run_takes_its_loop_from_the_session_not_from_another_run():
    """``jitbench.run.session`` makes every loop of workers (a run's and its resume's, the warm
    pass's, an A/B arm's, a sweep's; outside any run, ``isolate=True``'s) and starts and ends
    every kind of run; an A/B arm imports nothing from the runner; the calibration brings its
    own group handlers."""
    def imports(path: Path, module: str) -> bool:
        return any(isinstance(n, ast.ImportFrom) and n.module == module
                   for n in _nodes(path))

    assert not imports(BENCH / "run" / "ab_arms.py", "jitbench.run.runner")
    assert _modules_where(lambda n: _call_named(n, "open_loop")) == ["run/session.py"]
    runner_text = (BENCH / "run" / "runner.py").read_text()
    assert ".owns(" not in runner_text and "calibration.PROTOCOL" not in runner_text
    # every kind of run starts and ends through a Session: no one else arms the signals
    for kind in ("runner.py", "ab_arms.py", "sweep.py"):
        assert imports(BENCH / "run" / kind, "jitbench.run.session"), kind
    assert _modules_where(lambda n: _call_named(n, "stop_cleanly")) == ["run/session.py"]


def _calls_on(node, owner: str, methods: set[str]) -> bool:
    """``owner.method(...)`` for one of ``methods``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in methods and isinstance(node.func.value, ast.Name)
            and node.func.value.id == owner)


@pytest.mark.unit
def test_one_place_creates_a_run_and_one_resumes_it():
    """A run's folder and record are made (``RunRecord.folder``, ``create``, ``create_sweep``),
    opened again (``RunRecord.open``) and their rows written (``.writing()``) by
    ``jitbench.run.session.Session`` alone: ``Session.create`` and ``Session.resume``."""
    assert _modules_where(lambda n: _calls_on(n, "RunRecord", {
        "folder", "create", "create_sweep"})) == ["run/session.py"]
    assert _modules_where(lambda n: _calls_on(n, "RunRecord", {"open"})) == ["run/session.py"]
    assert _modules_where(lambda n: _call_named(n, "writing")) == ["run/session.py"]
    # and no one makes a Session but through them
    assert _modules_where(lambda n: _call_named(n, "Session")) == []
    session = _tree(BENCH / "run" / "session.py")
    methods = {f.name for c in ast.walk(session) if isinstance(c, ast.ClassDef)
               and c.name == "Session" for f in c.body if isinstance(f, ast.FunctionDef)}
    assert {"create", "resume", "running", "loop"} <= methods, methods
    # the check itself sees such a call
    assert _calls_on(ast.parse("RunRecord.open(d)").body[0].value, "RunRecord", {"open"})


@pytest.mark.unit
def test_run_ids_and_a_runs_sub_folders_are_named_in_results_alone():
    """``jitbench.results.run_folder`` names run ids and a run's sub-folders (``logs/``, a
    night's ``rechecks/``, ``repeats/``, ``change/``, ``ab/``): no other module joins one of
    those names to a path or builds an id from the clock."""
    from jitbench.results import run_folder

    names = {run_folder.LOGS, run_folder.RECHECKS, run_folder.REPEATS, run_folder.CHANGE,
             run_folder.AB}
    assert names == {"logs", "rechecks", "repeats", "change", "ab"}

    def joins_a_sub_folder(n) -> bool:
        return (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                and isinstance(n.right, ast.Constant) and n.right.value in names)

    def a_run_id_from_the_clock(n) -> bool:
        return (_call_named(n, "strftime") and n.args and isinstance(n.args[0], ast.Constant)
                and str(n.args[0].value).startswith("%Y%m%d"))

    outside = [m for m in _modules_where(joins_a_sub_folder) if not m.startswith("results/")]
    assert outside == [], outside
    assert _modules_where(a_run_id_from_the_clock) == ["results/run_folder.py"]
    assert joins_a_sub_folder(ast.parse('night / "rechecks"').body[0].value)


@pytest.mark.unit
def test_the_worker_and_its_parent_share_the_wire_format_module():
    def imports(path: Path) -> set[str]:
        return {f"{n.module}.{a.name}" for n in _nodes(path)
                if isinstance(n, ast.ImportFrom) and n.module for a in n.names}

    for side in ("worker.py", "worker_parent.py"):
        assert "jitbench.run.wire" in imports(BENCH / "run" / side), side
    assert not any(i.startswith("jitbench.run.worker.") for i in
                   imports(BENCH / "run" / "worker_parent.py"))


@pytest.mark.unit
def test_a_nights_summary_is_a_typed_record_written_and_read_in_results():
    """``jitbench.results.files.NightSummary`` is what a night's summary holds; the nightly
    returns it and writes it only through ``write_summary``."""
    import typing

    from jitbench.nightly import night, summary
    from jitbench.results import files

    assert typing.get_type_hints(files.load_summary)["return"] is files.NightSummary
    assert typing.get_type_hints(summary.summary)["return"] is files.NightSummary
    assert typing.get_type_hints(night.nightly)["return"] is files.NightSummary
    keys = set(files.NightSummary.__annotations__)
    for written in ("latest_run", "regression", "confirmed", "undecided", "smaller_steps",
                    "change", "accepted", files.PENDING):
        assert written in keys, written


@pytest.mark.unit
def test_no_file_holds_a_machines_path_to_this_checkout():
    """Lab scripts and pages take their folders as arguments or variables and find the
    repository from their own place: a path of the machine they were written on (this
    checkout's, or the development machine's checkout) runs nowhere else. Recorded fixtures
    keep what the run recorded."""
    here = str(ROOT.resolve())
    found = []
    for folder in ("bench", "suites", "docs", "examples", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if (not path.is_file() or "fixtures" in path.parts or "__pycache__" in path.parts
                    or path.suffix not in (".py", ".sh", ".md", ".yml", ".toml", ".txt")):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if here + "/" in text or "/work/" "main/" in text:
                found.append(str(path.relative_to(ROOT)))
    assert found == [], found
