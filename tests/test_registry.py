"""Registry expansion and filters: what a run would execute, before anything runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jitbench.define.workload import (Case, Filters, Workload, expand, group_cases,
                                   variants_left_out)
from jitbench.errors import UserError


@pytest.mark.unit
def test_every_workload_framework_and_mode_is_expanded():
    cases = expand(Filters(device=("cpu",)))
    assert {c.workload for c in cases} == {"matmul_relu", "mmd", "rnn", "train_step"}
    assert {(c.framework, c.mode) for c in cases} == {
        ("tf", "eager"), ("tf", "graph"), ("tf", "xla"), ("tf", "autoclustering"),
        ("jax", "eager"), ("jax", "jit"), ("jax", "aot"), ("jax", "donate")}
    assert {c.workload for c in cases if c.mode == "donate"} == {"train_step"}
    assert {c.dtype for c in cases if c.workload == "mmd"} == {"float32", "float64"}
    assert {c.variant for c in cases if c.workload == "matmul_relu"} == {"fused", "split"}
    assert len(cases) == len(set(cases))  # frozen, hashable, no duplicates


@pytest.mark.unit
def test_the_default_quick_grid_takes_two_training_step_variants_and_a_named_suite_all():
    every = {f"{o}-{b}" for o in ("sgd", "adam") for b in ("bn_train", "bn_infer", "no_bn")}

    def variants(**kw):
        return {c.variant for c in expand(Filters(device=("cpu",), **kw))
                if c.workload == "train_step"}

    assert variants() == {"adam-bn_train", "sgd-no_bn"}
    assert variants(suite=("train_step",)) == every
    assert variants(suite=("train_step", "mmd")) == every
    assert variants(variant=("sgd-bn_infer",)) == {"sgd-bn_infer"}
    assert variants(every_variant=True) == every
    assert variants(size="full") == every  # nightlies measure them all
    assert variants_left_out(Filters(device=("cpu",))) == {"train_step": (2, 6)}
    assert variants_left_out(Filters(suite=("train_step",))) == {}
    assert variants_left_out(Filters(size="full")) == {}


@pytest.mark.unit
def test_default_variants_must_name_variants_of_the_workload():
    with pytest.raises(UserError, match=r"default_variants\['quick'\].*valid: .*a, b"):
        Workload(name="w", grid={"quick": [{}]}, dtypes=("float32",), inputs=None,
                 reference=None, flops=None, tolerance={}, variants=("a", "b"),
                 default_variants={"quick": ("a", "c")})


@pytest.mark.unit
def test_filters_select_and_count():
    cases = expand(Filters(suite=("mmd",), framework=("jax",), device=("cpu",),
                           dtype=("float64",)))
    assert cases and all(c.workload == "mmd" and c.framework == "jax" and c.dtype == "float64"
                         for c in cases)
    assert {c.mode for c in cases} == {"eager", "jit", "aot"}
    full = expand(Filters(suite=("matmul_relu",), size="full", device=("cpu",)))
    assert any(c.size == "1000x10000x20000" for c in full)
    assert not any(c.size == "1000x10000x20000"
                   for c in expand(Filters(suite=("matmul_relu",), device=("cpu",))))


@pytest.mark.unit
def test_groups_hold_the_modes_that_are_interleaved():
    cases = expand(Filters(suite=("rnn",), device=("cpu",)))
    groups = group_cases(cases)
    for g in groups:
        assert len({(c.workload, c.variant, c.params_json, c.dtype, c.framework) for c in g}) == 1
    tf_groups = [sorted(c.mode for c in g) for g in groups if g[0].framework == "tf"]
    # auto-clustering is switched on per call: interleaved with graph mode in one group
    assert ["autoclustering", "eager", "graph", "xla"] in tf_groups


@pytest.mark.unit
@pytest.mark.parametrize("kind,value", [("suite", "nope"), ("framework", "torch"),
                                        ("mode", "turbo"), ("device", "tpu"),
                                        ("dtype", "float16"), ("variant", "x")])
def test_unknown_names_name_the_bad_value_and_the_valid_ones(kind, value):
    with pytest.raises(UserError) as err:
        expand(Filters(**{kind: (value,)}))
    assert repr(value) in str(err.value) and "valid:" in str(err.value)


@pytest.mark.unit
def test_unknown_size_set():
    with pytest.raises(UserError, match="'huge'.*quick, full"):
        expand(Filters(size="huge"))


@pytest.mark.unit
def test_case_round_trips_and_seed_is_shared_by_modes():
    cases = expand(Filters(suite=("mmd",), device=("cpu",)))
    assert all(Case.from_dict(c.to_dict()) == c for c in cases)
    same_data = [c for c in cases if c.size == cases[0].size and c.dtype == cases[0].dtype]
    assert len({c.seed for c in same_data}) == 1


@pytest.mark.unit
def test_a_workload_is_one_file(tmp_path):
    f = tmp_path / "double.py"
    f.write_text(
        "from jitbench import Workload\n"
        "WORKLOAD = Workload(name='double', grid={'quick': [dict(n=4)]}, dtypes=('float32',),\n"
        "    inputs=lambda p, d, rng: (rng.standard_normal(p['n']).astype(d),),\n"
        "    reference=lambda xs, p, v: 2 * xs[0], flops=lambda p, v: p['n'],\n"
        "    tolerance={'float32': (1e-6, 1e-6)}, jax=lambda p, d, v: [lambda x: 2 * x])\n")
    cases = expand(Filters(suite=("double",), device=("cpu",), suite_files=(str(f),)))
    assert [c.mode for c in cases] == ["eager", "jit", "aot"]


def test_import_bench_imports_no_framework():
    code = ("import jitbench, jitbench.define.workload, jitbench.cli.main, jitbench.run.runner, "
            "sys; "
            "assert 'tensorflow' not in sys.modules and 'jax' not in sys.modules, "
            "[m for m in sys.modules if m.startswith(('tensorflow', 'jax'))]")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_list_prints_the_count_and_rejects_unknown_names():
    ok = subprocess.run([sys.executable, "-m", "jitbench", "list", "--suite", "rnn",
                         "--device", "cpu"], capture_output=True, text=True)
    assert ok.returncode == 0
    assert ok.stdout.strip().splitlines()[-1].startswith("14 cases")
    default = subprocess.run([sys.executable, "-m", "jitbench", "list", "--device", "cpu"],
                             capture_output=True, text=True)
    assert default.returncode == 0
    assert ("train_step: 2 of its 6 variants in the default quick grid "
            "(--suite train_step measures all)") in default.stderr
    bad = subprocess.run([sys.executable, "-m", "jitbench", "list", "--framework", "tf,torch"],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "jitbench: error: unknown framework 'torch'; valid: jax, tf"
    assert "Traceback" not in bad.stderr
