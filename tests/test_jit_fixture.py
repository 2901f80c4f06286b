"""The ``jit_benchmark`` fixture in a project of its own, as a user runs it: whole pytest sessions
in a subprocess (``pytester``) in a folder with no conftest, the plugin found through the
``pytest11`` entry point that ``pyproject.toml`` declares (a ``.dist-info`` written from it, so
the test holds before jitbench is re-installed), then the JSON and ``jitbench report`` on it.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
FAST = ["-p", "no:cacheprovider", "--benchmark-max-time=0.02", "--benchmark-min-rounds=3"]
# what jitbench.pytest_plugin.plugin.run_case writes for the suites' cases (README, "Using with
# pytest")
# (max_abs_err and max_rel_err: only against a reference, given here for JAX)
SUITE_KEYS = {"jitbench_schema", "case_id", "workload", "variant", "size", "size_set", "params",
              "dtype", "framework", "mode", "jit", "device", "source", "status",
              "first_call_s", "early_calls_s", "warmup_calls", "warmup_s", "settled",
              "sync_overhead_s", "flops", "gflops", "rtol", "atol"}

USER_TESTS = '''
import numpy as np
import jax
import jax.numpy as jnp
import tensorflow as tf
from jitbench import Sampling, Tolerances


def jax_layer(w, x):
    return jax.nn.relu(w @ x)


def tf_layer(w, x):
    return tf.nn.relu(tf.matmul(w, x))


def layer_np(w, x):
    return np.maximum(w @ x, 0.0)


def inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((16, 16)).astype(np.float32),
            rng.standard_normal((16, 8)).astype(np.float32))


def test_jax(jit_benchmark):
    w, x = inputs()
    r = jit_benchmark(jax_layer, jnp.asarray(w), jnp.asarray(x), reference=layer_np,
                      sampling=Sampling(precision=0.2, budget=2),
                      tolerances=Tolerances(rtol=2e-3))
    assert {row["mode"] for row in r.rows} == {"eager", "jit", "aot"}


def test_tf(jit_benchmark):
    w, x = inputs()
    jit_benchmark(tf_layer, tf.constant(w), tf.constant(x))


def test_tf_autoclustering(jit_benchmark):
    w, x = inputs()
    jit_benchmark(tf_layer, tf.constant(w), tf.constant(x), modes=["graph", "autoclustering"])


def broken(w, x):
    raise ValueError("shapes do not fit")


def test_raises(jit_benchmark):
    jit_benchmark(broken, *map(jnp.asarray, inputs()))


def test_bad_precision(jit_benchmark):
    jit_benchmark(jax_layer, *map(jnp.asarray, inputs()), precision=5)


def test_mixed(jit_benchmark):
    w, x = inputs()
    jit_benchmark(jax_layer, jnp.asarray(w), tf.constant(x))


def test_unknown_mode(jit_benchmark):
    jit_benchmark(jax_layer, *map(jnp.asarray, inputs()), modes=["eager", "xla"])


def test_plain(benchmark):
    benchmark(sum, range(10))


def test_keras_step(jit_benchmark):
    from keras_step import keras_step  # tests/user_code/keras_step.py, copied beside

    step, x, y, *_ = keras_step()
    r = jit_benchmark(step, x, y, modes=["eager", "graph", "xla"], precision=0.2, budget=2)
    assert {row["status"] for row in r.rows} == {"ok"}


def test_keras_planted(jit_benchmark):
    from keras_step import keras_step

    step, x, y, *_ = keras_step(planted=1e3)
    jit_benchmark(step, x, y, modes=["graph", "xla"], precision=0.2, budget=1)
'''

REPORT = """
import json, sys
import jitbench
df = jitbench.load_results(sys.argv[1])
print(json.dumps({"n": len(df), "modes": sorted(f + "-" + m for f, m in
                                                 zip(df["framework"], df["mode"]))}))
"""


def entry_point_dist(where: Path) -> None:
    """A ``.dist-info`` whose ``entry_points.txt`` holds pyproject's pytest11 entry points."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    eps = project.get("entry-points", {}).get("pytest11", {})
    dist = where / "jitbench_plugin_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jitbench-plugin-probe\n"
                                   "Version: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))


@pytest.fixture
def project(pytester, monkeypatch) -> Path:
    monkeypatch.setenv("COLUMNS", "400")  # short-summary lines keep their messages
    # a user's shell has no TF_XLA_FLAGS; this process may (importing bench's TF adapter sets
    # it), and the project's pytest would inherit it
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    entry_point_dist(pytester.path)
    monkeypatch.setenv("PYTHONPATH", f"{pytester.path}:{REPO}")  # the dist-info, this bench
    return pytester.path


def test_user_project_jax_and_tf_json_and_report(pytester, project, tmp_path):
    (project / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    shutil.copy(REPO / "tests" / "user_code" / "keras_step.py", project)
    out = tmp_path / "out.json"
    result = pytester.runpytest_subprocess("--benchmark-only", f"--benchmark-json={out}", "-ra",
                                           *FAST)
    result.assert_outcomes(passed=4, failed=5, skipped=1)
    result.stdout.fnmatch_lines_random([
        "SKIPPED*tf autoclustering on cpu needs TF_XLA_FLAGS='--tf_xla_cpu_global_jit' before "
        "TensorFlow starts*(or leave autoclustering out of modes)*",
        "FAILED*test_raises*broken raised ValueError in eager mode (JIT off*shapes do not fit*",
        "FAILED*test_mixed*inputs of mixed frameworks: argument 0 is a JAX ArrayImpl and "
        "argument 1 is a TensorFlow EagerTensor*",
        "FAILED*test_unknown_mode*unknown mode 'xla' for jax; valid: eager, jit, aot*",
        "FAILED*test_bad_precision*precision=5: give a fraction in (0, 1) such as 0.05*",
        # the state after one step from the same saved weights, not the loss, shows it
        "FAILED*test_keras_planted*train_step tf xla: mismatch: state after one step from the "
        "same start differs from graph's (JIT off)*",
        "*test_jax[[]jax-jit[]]*", "*test_tf[[]tf-xla[]]*",
    ])
    result.stdout.no_fnmatch_line("*fixture was not used*")

    benches = json.loads(out.read_text())["benchmarks"]
    names = sorted(b["name"] for b in benches)
    assert names == ["test_jax[jax-aot]", "test_jax[jax-eager]", "test_jax[jax-jit]",
                     "test_keras_step[tf-eager]", "test_keras_step[tf-graph]",
                     "test_keras_step[tf-xla]", "test_plain",
                     "test_tf[tf-eager]", "test_tf[tf-graph]", "test_tf[tf-xla]"]
    for b in benches:
        if b["name"] == "test_plain":
            assert b["extra_info"] == {}
            continue
        info = b["extra_info"]
        if b["name"].startswith("test_keras_step"):  # checked after one step from one state
            assert info["status"] == "ok" and info["state"].startswith("14 variables saved")
            assert not info["jit"] or info["max_rel_err_vs_nojit"] < 1e-3
            continue
        assert SUITE_KEYS <= set(info), SUITE_KEYS - set(info)
        assert info["status"] == "ok" and info["first_call_s"] > 0
        assert b["group"] == f"test_user.py::test_{info['framework']}"
        assert b["stats"]["rounds"] >= 3 and len(b["stats"]["data"]) == b["stats"]["rounds"]
        assert info["params"] == {"shapes": [[16, 16], [16, 8]], "elements": 384}
        assert info["dtype"] == "float32"
        if info["jit"]:
            assert info["max_rel_err_vs_nojit"] < 1e-3
            # sequential stopping (test_jax: Sampling(precision=0.2, budget=2)): a verdict per
            # JIT entry
            assert info["verdict"] in ("faster", "slower", "same", "unresolved")
            assert info["verdict_baseline"] == {"jax": "eager", "tf": "graph"}[info["framework"]]
        if info["framework"] == "jax":  # checked against the float64 reference given
            assert info["max_rel_err"] < 1e-3
            assert info["rtol"] == 2e-3  # the Tolerances given (float32's default: 1e-3)
            assert info["first_compiles"] >= 1  # JAX's compile counters work in-process

    loaded = pytester.run(sys.executable, "-c", REPORT, str(out))
    assert loaded.ret == 0, loaded.stderr.str()
    assert json.loads(loaded.outlines[-1]) == {
        "n": 9, "modes": ["jax-aot", "jax-eager", "jax-jit", "tf-eager", "tf-eager", "tf-graph",
                          "tf-graph", "tf-xla", "tf-xla"]}
    report = pytester.run(sys.executable, "-m", "jitbench", "report", str(out), "-o",
                          str(tmp_path / "rep"))
    assert report.ret == 0, report.stderr.str()
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "jax_layer" in page and "tf_layer" in page


def test_bare_pytest_in_a_project_imports_no_framework(pytester, project, tmp_path):
    (project / "test_plain.py").write_text(textwrap.dedent('''
        import sys

        def test_plugin_loaded_no_framework_imported(request):
            assert request.config.pluginmanager.has_plugin("jitbench")
            assert "tensorflow" not in sys.modules and "jax" not in sys.modules
            assert "suites" not in sys.modules  # jitbench's own suites stay unloaded

        def test_plain(benchmark):
            benchmark(sum, range(10))
    '''))
    out = tmp_path / "plain.json"
    result = pytester.runpytest_subprocess(f"--benchmark-json={out}", "--strict-markers", *FAST)
    result.assert_outcomes(passed=2)
    # pytest-benchmark's machine_info as it writes it, nothing of jitbench's added
    assert "jitbench" not in json.loads(out.read_text())["machine_info"]
    markers = pytester.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    markers.stdout.no_fnmatch_line("@pytest.mark.nojit*")


MODEL_TESTS = '''
import numpy as np


def test_linen(jit_benchmark):
    from flax_steps import linen_step  # tests/user_code/flax_steps.py, copied beside

    step, state, batch = linen_step()
    r = jit_benchmark(step, state, batch, precision=0.2, budget=1)
    assert {row["status"] for row in r.rows} == {"ok"}


def test_nnx(jit_benchmark):
    from flax_steps import nnx_step

    step, *args = nnx_step()
    r = jit_benchmark(step, *args, precision=0.2, budget=1)
    assert {row["status"] for row in r.rows} == {"ok"}


def test_keras_model(jit_benchmark):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 8)).astype("float32"), rng.standard_normal((32, 1))
    r = jit_benchmark(model, x, y, precision=0.2, budget=1)
    assert {row["status"] for row in r.rows} == {"ok"}
'''


def test_flax_steps_and_a_keras_model_through_the_fixture(pytester, project, tmp_path):
    pytest.importorskip("flax")
    (project / "test_models.py").write_text(textwrap.dedent(MODEL_TESTS))
    shutil.copy(REPO / "tests" / "user_code" / "flax_steps.py", project)
    out = tmp_path / "out.json"
    result = pytester.runpytest_subprocess("--benchmark-only", f"--benchmark-json={out}", "-ra",
                                           *FAST)
    result.assert_outcomes(passed=3)
    names = sorted(b["name"] for b in json.loads(out.read_text())["benchmarks"])
    assert names == ["test_keras_model[tf-eager]", "test_keras_model[tf-graph]",
                     "test_keras_model[tf-xla]", "test_linen[jax-aot]", "test_linen[jax-eager]",
                     "test_linen[jax-jit]", "test_nnx[jax-eager]", "test_nnx[jax-jit]"]

