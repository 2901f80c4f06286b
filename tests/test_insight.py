"""What XLA built, end to end through `jitbench run`'s runner and real workers (TF and JAX, CPU):
every JIT row carries fusion facts and a fingerprint, stable across runs of unchanged code and
changed by a changed workload; --dump-hlo leaves the HLO; --profile leaves a trace that the
profiler's own loader (XLA's XSpace reader, ``jax.profiler.ProfileData``) opens."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from jitbench.define.workload import Filters, expand
from jitbench.protocol.settings import Protocol
from jitbench.run import runner
from jitbench.xla import capture as insight

FAST = Protocol(min_time=0.02, min_samples=3, max_samples=10, max_time=0.5,
                warmup_max_time=0.3, budget=0.5, block_time=0.1)
SMALL = Path(__file__).parent / "workloads" / "insight_small.py"


def _rows(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    return {r["case_id"]: r for r in map(json.loads, lines)}


def _cases(*files: Path):
    names = tuple(f.stem for f in files)  # each file's WORKLOAD is named like the file
    return expand(Filters(suite=names, suite_files=tuple(str(f) for f in files),
                          device=("cpu",)))


@pytest.fixture(scope="module")
def changed(tmp_path_factory) -> Path:
    """The same workload with tanh swapped for sin (and its own name)."""
    path = tmp_path_factory.mktemp("wl") / "insight_changed.py"
    text = SMALL.read_text().replace("tanh", "sin").replace('"insight_small"',
                                                            '"insight_changed"')
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("results")
    run_dir = runner.run(_cases(SMALL), out, protocol=FAST, command=["pytest"],
                         dump_hlo=True, profile=True)
    return {"dir": run_dir, "rows": _rows(run_dir)}


@pytest.fixture(scope="module")
def second(tmp_path_factory, changed) -> dict:
    out = tmp_path_factory.mktemp("results")
    run_dir = runner.run(_cases(SMALL, changed), out, protocol=FAST, command=["pytest"])
    return {"dir": run_dir, "rows": _rows(run_dir)}


def test_every_jit_row_has_fusion_facts_and_a_fingerprint(first):
    rows = first["rows"]
    assert {r["status"] for r in rows.values()} == {"ok"}
    jit = [r for r in rows.values() if r["jit"]]
    assert {(r["framework"], r["mode"]) for r in jit} >= {("tf", "xla"),
                                                          ("tf", "autoclustering"),
                                                          ("jax", "jit")}
    for r in jit:
        assert r["hlo_programs"] == 1, r["case_id"]
        assert r["hlo_kernels"] >= 1 and r["hlo_fusions"] >= 1, r["case_id"]
        assert re.fullmatch(r"[0-9a-f]{16}", r["hlo_fingerprint"]), r["case_id"]
        assert r["insight_s"] >= 0
    # a mode without an XLA program says why instead
    for r in rows.values():
        if not r["jit"]:
            assert r.get("hlo_fingerprint") is None and r["hlo_note"], r["case_id"]


def test_cost_analysis_next_to_the_formula(first):
    rows = first["rows"]
    jax_jit = next(r for r in rows.values() if r["framework"] == "jax" and r["mode"] == "jit")
    # 2·8³ multiply-adds + 3·8² elementwise FLOPs; tanh is a transcendental, the formula
    # counts it as a FLOP: 0.95 of the formula, within the 10% tolerance
    assert jax_jit["xla_flops"] == 2 * 8 ** 3 + 3 * 8 ** 2
    assert jax_jit["xla_transcendentals"] == 8 ** 2
    assert jax_jit["xla_bytes_accessed"] > 0
    assert jax_jit["xla_flops_ratio"] == pytest.approx(1216 / 1280)
    assert jax_jit["xla_flops_mismatch"] is False
    tf_xla = next(r for r in rows.values() if r["framework"] == "tf" and r["mode"] == "xla")
    assert tf_xla.get("xla_flops") is None and "no XLA cost analysis" in tf_xla["cost_note"]


def test_unchanged_code_same_fingerprint_changed_workload_another(first, second):
    a, b = first["rows"], second["rows"]
    for case_id, r in a.items():
        if r["jit"]:
            assert b[case_id]["hlo_fingerprint"] == r["hlo_fingerprint"], case_id
            other = b[case_id.replace("insight_small", "insight_changed")]
            assert other["hlo_fingerprint"] != r["hlo_fingerprint"], case_id
    # TF's two JIT routes compile the same function into different programs: not one print
    prints = {r["mode"]: r["hlo_fingerprint"] for r in a.values()
              if r["framework"] == "tf" and r["jit"]}
    assert prints["xla"] != prints["autoclustering"]


def test_dump_hlo_leaves_each_jit_programs_text_and_graph(first):
    run_dir = first["dir"]
    assert json.loads((run_dir / "meta.json").read_text())["insight"] == {
        "dump_hlo": True, "profile": True}
    for r in first["rows"].values():
        if not r["jit"]:
            assert not r.get("hlo_files")
            continue
        texts = [f for f in r["hlo_files"] if f.endswith(".txt")]
        assert len(texts) == 1 and (run_dir / texts[0]).is_file()
        assert "HloModule" in (run_dir / texts[0]).read_text()
        dots = [f for f in r["hlo_files"] if f.endswith(".dot")]
        assert (run_dir / dots[0]).read_text().lstrip().startswith("digraph")
        if shutil.which("dot"):
            assert any(f.endswith(".svg") for f in r["hlo_files"])
        else:
            assert "not installed" in r["hlo_graph_note"]


def test_profile_traces_open_in_the_profilers_loader_and_show_the_hlo_kernels(first):
    profile_data = pytest.importorskip("jax.profiler").ProfileData
    run_dir = first["dir"]
    for r in first["rows"].values():
        xplanes = [f for f in r["profile_files"] if f.endswith(".xplane.pb")]
        assert len(xplanes) == 1, r["case_id"]
        data = profile_data.from_file(str(run_dir / xplanes[0]))
        names = {e.name for p in data.planes for line in p.lines for e in line.events}
        assert names, r["case_id"]
        if r["jit"]:
            # the kernels XLA built (fusion names in the dumped HLO) ran in the trace
            text = (run_dir / next(f for f in r["hlo_files"] if f.endswith(".txt"))).read_text()
            fusions = set(re.findall(r"%([\w.\-]+) = \S+ fusion\(", text))
            assert fusions and fusions <= names, (r["case_id"], fusions - names)
        # and a JSON trace for Perfetto beside it
        assert any(f.endswith(".json.gz") for f in r["profile_files"]), r["case_id"]


@pytest.mark.unit
def test_options_reach_a_resumed_run_and_default_off(tmp_path):
    from jitbench.run.options import RunOptions

    meta = {"insight": {"dump_hlo": True}}
    got = RunOptions.from_meta(meta).capture(tmp_path)
    assert got["dump_hlo"] is True and got["profile"] is False
    assert got["folder"] == str(tmp_path.resolve() / "cases")
    assert insight.Options.from_message(None) == insight.Options()


@pytest.mark.unit
def test_a_regression_record_says_whether_the_compiled_program_changed():
    import pandas as pd

    from jitbench.analysis.history import SERIES_KEYS, hlo_change

    series = {"workload": "w", "variant": "default", "size": "n8", "dtype": "float32",
              "framework": "jax", "mode": "jit", "device": "cpu"}
    prints = {"r1": "aaaa", "r2": "aaaa", "r3": "bbbb"}
    df = pd.DataFrame([dict(series, run_id=r, hlo_fingerprint=p) for r, p in prints.items()]
                      + [dict(series, run_id="r3", mode="eager", hlo_fingerprint=None)])
    assert set(SERIES_KEYS) <= set(df.columns)
    assert hlo_change(df, ["r1", "r2", "r3"], series) == {
        "hlo_fingerprint": "bbbb", "hlo_reference_fingerprint": "aaaa", "hlo_changed": True}
    assert hlo_change(df, ["r1", "r2"], series)["hlo_changed"] is False
    # a JIT-off mode has no program; runs from before fingerprints existed say nothing
    assert hlo_change(df, ["r1", "r2", "r3"], dict(series, mode="eager")) == {
        "hlo_changed": None}
    assert hlo_change(df.drop(columns="hlo_fingerprint"), ["r1", "r3"], series) == {
        "hlo_changed": None}


@pytest.mark.unit
def test_a_framework_that_cannot_give_the_program_leaves_a_note_not_a_failure(tmp_path):
    class Broken:
        def compiled_programs(self, *args, **kwargs):
            raise RuntimeError("INTERNAL: no executable")

    fields = insight.programs_fields(Broken(), "jit", [], "cpu", [], 1.0, insight.Options(),
                                     "case")
    assert "could not get XLA's program: RuntimeError: INTERNAL" in fields["hlo_note"]
    assert "hlo_fingerprint" not in fields
    # no Graphviz: the .dot stays, the row says how to get the picture
    dot = tmp_path / "g.dot"
    dot.write_text("digraph { a -> b }")
    svg, why = insight.render_svg(dot, which=lambda name: None)
    assert svg is None and "apt-get install graphviz" in why
    if shutil.which("dot"):
        svg, why = insight.render_svg(dot)
        assert why == "" and svg.read_text().lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.unit
def test_the_dump_reader_returns_new_cluster_modules_in_compile_order(tmp_path):
    from jitbench.xla.dump_reader import DumpReader

    env = {"XLA_FLAGS": f"--xla_dump_to={tmp_path}"}  # a user's own dump: kept, filtered
    reader = DumpReader.install(env, None, "^cluster_[0-9]+__")
    assert env["XLA_FLAGS"] == f"--xla_dump_to={tmp_path}" and not reader.owned

    def dump(i, name):
        (tmp_path / f"module_{i:04d}.{name}.cpu_after_optimizations.txt").write_text(
            f"HloModule {name}\n")
        (tmp_path / f"module_{i:04d}.{name}.before_optimizations.txt").write_text("x")

    dump(0, "cluster_0__XlaCompiledKernel_true")  # the warm-up's, before the group
    reader.mark()
    dump(2, "cluster_3__XlaCompiledKernel_true")
    dump(1, "cluster_1__XlaCompiledKernel_true")
    dump(3, "a_inference_f_7__XlaMustCompile_true")  # jit_compile=True: another mode's
    got = reader.new_programs()
    assert [p.name for p in got] == ["1-cluster_1", "2-cluster_3"]
    assert reader.new_programs() == []
    assert len(list(tmp_path.iterdir())) == 8  # not ours: nothing deleted

    fresh: dict[str, str] = {}
    ours = DumpReader.install(fresh, None, "^cluster_")  # in the temp folder
    assert f"--xla_dump_to={ours.folder}" in fresh["XLA_FLAGS"] and ours.owned
    assert "--xla_dump_hlo_module_re=^cluster_" in fresh["XLA_FLAGS"]
    ours.remove()
    assert not ours.folder.exists()
