"""Your own function as JAX, flax and TF code call it: keyword arguments (a jit's
``static_argnames`` kept, arrays as inputs, Python values static), a keyword that is also one of
``jitbench.measure``'s options refused by name, the ``jit_benchmark`` fixture taking
``measure``'s options, and a verdict a test can assert on (``Result.verdict``,
``Result.speedup``). Tiny sizes and a short protocol: the file runs in well under a minute."""

from __future__ import annotations

import functools
import inspect
import json
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

import jitbench
from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol

REPO = Path(__file__).resolve().parent.parent
QUICK = Protocol(min_time=0.02, min_samples=5, warmup_max_time=1.0, budget=1.0)


def _power_iteration(a, v, n_iter=3):
    import jax.numpy as jnp

    for _ in range(n_iter):
        v = a @ v
        v = v / jnp.linalg.norm(v)
    return v


@pytest.fixture(scope="module")
def power():
    """One real measurement, shared: a jitted power iteration whose trip count is static by
    name, called as JAX code calls it (``n_iter=30``)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jitted = functools.partial(jax.jit, static_argnames=("n_iter",))(_power_iteration)
    a = jnp.asarray(np.random.default_rng(0).standard_normal((16, 16)), jnp.float32)
    v = jnp.ones(16, jnp.float32)
    plain = np.asarray(jitted(a, v, n_iter=30))
    return jitbench.measure(jitted, a, v, n_iter=30, protocol=QUICK, reference=plain), plain


def test_a_static_argname_by_keyword_runs_every_mode_ok_compiled_once(power):
    r, _ = power
    rows = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in rows.items()} == {
        "eager": "ok", "jit": "ok", "aot": "ok"}, r.summary()
    assert rows["jit"]["first_compiles"] == 1  # static: one program for n_iter=30
    assert rows["jit"]["unwrapped"] == "jax.jit"
    # every mode answers as a plain call of the user's jitted function (the reference)
    assert all(row["max_rel_err"] < 1e-5 for row in rows.values())
    assert rows["eager"]["size"] == "16x16,16"  # n_iter is no input


def test_verdict_and_speedup_are_the_summarys_figures(power):
    r, _ = power
    s = r.speedup("jit")
    assert dataclass_frozen(s)
    assert (s.mode, s.baseline) == ("jit", "eager")
    assert s.low <= s.ratio <= s.high and s.verdict == r.verdict("jit")
    assert s.verdict in ("faster", "slower", "same", "unresolved")
    sp = r.speedups()
    row = sp[(sp["mode"] == "jit") & (sp["baseline"] == "eager")].iloc[0]
    assert (s.ratio, s.low, s.high, s.verdict) == (
        row["speedup"], row["ci_low"], row["ci_high"], row["verdict"])
    assert r.speedup("aot", against="eager").baseline == "eager"


def dataclass_frozen(obj) -> bool:
    try:
        obj.ratio = 0.0
    except AttributeError:  # dataclasses.FrozenInstanceError
        return True
    return False


@pytest.mark.parametrize("mode, says", [("jti", "not measured here; valid: jit, aot"),
                                        ("eager", "a JIT-off mode (a baseline); valid: jit")])
def test_a_bad_mode_name_names_the_valid_ones(power, mode, says):
    r, _ = power
    with pytest.raises(UserError, match=r"mode '\w+' is " + says.replace("(", r"\(")
                       .replace(")", r"\)")):
        r.verdict(mode)
    with pytest.raises(UserError, match="no speedup against graph"):
        r.speedup("jit", against="graph")


def _layer(x, *, w, act="relu", scale=1.0):
    import jax.numpy as jnp

    y = (x @ w) * scale
    return jnp.maximum(y, 0.0) if act == "relu" else jnp.tanh(y)


def test_a_keyword_array_is_an_input_and_a_keyword_string_is_static():
    jnp = pytest.importorskip("jax.numpy")
    rng = np.random.default_rng(1)
    x, w = (jnp.asarray(rng.standard_normal(s), jnp.float32) for s in ((8, 8), (8, 4)))
    seen = {}

    def reference(x, *, w, act, scale):  # gets the keywords as the function does
        seen.update(act=act, scale=scale, w=w.shape)
        return np.tanh(x @ w * scale)

    r = jitbench.measure(_layer, x, w=w, act="tanh", scale=0.5, modes=["eager", "jit"],
                         protocol=QUICK, reference=reference)
    rows = {row["mode"]: row for row in r.rows}
    assert [row["status"] for row in r.rows] == ["ok", "ok"], r.summary()  # "tanh": static
    assert seen == {"act": "tanh", "scale": 0.5, "w": (8, 4)}
    assert rows["jit"]["size"] == "8x8,8x4"  # w counted as an input
    assert rows["jit"]["params"]["elements"] == 64 + 32
    assert rows["jit"]["max_rel_err_vs_nojit"] < 1e-5 and rows["jit"]["max_rel_err"] < 1e-5
    assert "static_argnums" not in rows["jit"]  # positional ones only: none here


def test_tf_keywords_through_tf_function_and_kwargs_for_a_clashing_name():
    tf = pytest.importorskip("tensorflow")

    @tf.function(jit_compile=True)
    def layer(x, *, w, name=None, scale=1.0):  # TF code often takes name=
        return tf.identity(tf.nn.relu(tf.matmul(x, w) * scale), name=name)

    x, w = tf.ones((8, 8)), tf.ones((8, 4))
    with pytest.raises(UserError, match=r"name= is both an option of jitbench.measure and a "
                                        r"parameter of layer.*kwargs=\{'name': \.\.\.\}"):
        jitbench.measure(layer, x, w=w, name="mine", modes=["graph"], protocol=QUICK)
    r = jitbench.measure(layer, x, w=w, kwargs={"name": "out"}, scale=2.0, name="mine",
                         modes=["eager", "graph", "xla"], protocol=QUICK,
                         reference=lambda x, w, name, scale: np.maximum(x @ w * scale, 0))
    assert [row["status"] for row in r.rows] == ["ok", "ok", "ok"], r.summary()
    assert {row["workload"] for row in r.rows} == {"mine"}  # measure's own name=
    assert r.rows[0]["size"] == "8x8,8x4"


def _takes_device(x, device=None, *, scale=1.0):
    return x * scale


@pytest.mark.unit
@pytest.mark.parametrize("call, says", [
    (lambda: jitbench.measure(_takes_device, np.ones(3), device="cpu"),
     (r"device= is both an option of jitbench.measure and a parameter of _takes_device.*"
      r"kwargs=\{'device': \.\.\.\}")),
    (lambda: jitbench.measure(_takes_device, np.ones(3), modez=["eager"]),
     (r"modez= is neither an option of jitbench.measure nor a keyword _takes_device takes: "
      r"_takes_device has no parameter 'modez' \(did you mean jitbench.measure's option "
      r"modes=\?\)")),
    (lambda: jitbench.measure(_takes_device, np.ones(3), "gpu", kwargs={"device": "cpu"}),
     r"device= is neither .* it is already filled by a positional argument"),
    (lambda: jitbench.measure(_takes_device, np.ones(3), scale=2.0, kwargs={"scale": 1.0}),
     r"scale= is given both as a keyword and in kwargs"),
    (lambda: jitbench.measure(_takes_device, np.ones(3), kwargs=[("scale", 2.0)]),
     r"kwargs=\[\('scale', 2.0\)\]: give a dict"),
    (lambda: jitbench.measure(_takes_device, np.ones(3), scale=np.ones(3), donate=1,
                              framework="jax"),
     r"donate=1: give the position of a positional argument \(0 to 0\)"),
])
def test_keywords_that_cannot_be_passed_are_refused_by_name(call, says):
    with pytest.raises(UserError, match=says):
        call()


@pytest.mark.unit
def test_measures_options_reach_a_function_only_through_kwargs_when_both_take_them():
    """No error where the name is the function's alone, or ``kwargs`` says whose it is: the
    check is before anything is imported (numpy inputs, no framework)."""
    from jitbench.userfn.arguments import keyword_arguments
    from jitbench.userfn.measure import OPTIONS

    def kw(*args, kwargs=None, given=(), **keywords):
        return keyword_arguments(_takes_device, args, keywords, kwargs, dict.fromkeys(given),
                                 OPTIONS, "jitbench.measure")

    assert kw(1, scale=2.0) == {"scale": 2.0}
    assert kw(1, given=["device"], kwargs={}) == {}  # device= measure's: kwargs says so
    assert kw(1, given=["device"], kwargs={"device": "x"}) == {"device": "x"}
    assert kw(1, "gpu", given=["device"]) == {}  # the function's device= filled by position


@pytest.mark.unit
def test_the_fixture_takes_the_options_measure_takes():
    from jitbench.pytest_plugin.fixture import JitBenchmark
    from jitbench.userfn.measure import measure

    def options(fn):
        return {name: p.default for name, p in inspect.signature(fn).parameters.items()
                if p.kind is p.KEYWORD_ONLY}

    assert options(JitBenchmark.__call__) == options(measure)


pytest_plugins = ["pytester"]

FIXTURE_TESTS = '''
import jax
import jax.numpy as jnp
import numpy as np
from jitbench.protocol.settings import Protocol

FIXED = Protocol(min_time=0.02, min_samples=12, warmup_max_time=0.5, precision=None)


def step(params, x, *, lr=0.1):  # a training step: (new params, loss)
    loss, grad = jax.value_and_grad(lambda p: jnp.mean((x @ p) ** 2))(params)
    return params - lr * grad, loss


def test_donate_protocol_keyword(jit_benchmark):
    params = jnp.asarray(np.random.default_rng(0).standard_normal((8, 4)), jnp.float32)
    r = jit_benchmark(step, params, jnp.ones((16, 8)), lr=0.05, donate=0, protocol=FIXED)
    assert {row["mode"]: row["status"] for row in r.rows} == {
        "eager": "ok", "jit": "ok", "aot": "ok", "donate": "ok"}
    assert r.verdict("jit") in ("faster", "slower", "no difference")  # precision=None


def scaled(x, *, w, scale=1.0):
    return jnp.tanh(x @ w) * scale


def test_isolated_keywords(jit_benchmark):  # the keywords travel to the worker by name
    r = jit_benchmark(scaled, jnp.ones((4, 4)), w=jnp.ones((4, 2)), scale=2.0, isolate=True,
                      modes=["eager", "jit"], reference=lambda x, w, scale: np.tanh(x @ w) * 2)
    assert [row["size"] for row in r.rows] == ["4x4,4x2"] * 2


def test_timeout_without_isolate(jit_benchmark):
    jit_benchmark(step, jnp.ones((8, 4)), jnp.ones((16, 8)), timeout=5)


def test_a_clash(jit_benchmark):
    jit_benchmark(lambda x, device=None: x, jnp.ones(3), device="cpu")
'''


@pytest.mark.e2e  # a user's project in a process of its own (tests/conftest.py's rule)
def test_the_fixture_passes_donate_protocol_and_keywords_through(pytester, monkeypatch,
                                                                 tmp_path):
    """A user's project, run by pytest in a process of its own (``pytester``, as
    tests/test_jit_fixture.py): ``donate=`` adds the donate mode, ``protocol=`` replaces the
    one pytest-benchmark's options make (12 samples, not 3), keywords reach the function, in
    this process and in an ``isolate=True`` worker; the docs' verdict example passes as
    copied."""
    pytest.importorskip("jax")
    monkeypatch.setenv("COLUMNS", "400")  # short-summary lines keep their messages
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    # the plugin found through pyproject's pytest11 entry point, as in a user's project
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    dist = pytester.path / "jitbench_plugin_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jitbench-plugin-probe\n"
                                   "Version: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in eps["pytest11"].items()))
    monkeypatch.setenv("PYTHONPATH", f"{pytester.path}:{REPO}")
    (pytester.path / "test_user.py").write_text(textwrap.dedent(FIXTURE_TESTS))
    page = (REPO / "docs" / "own-function.md").read_text(encoding="utf-8")
    example = page.partition("### Asserting on a verdict in a test")[2]
    (pytester.path / "test_docs_example.py").write_text(
        example.partition("```python\n")[2].partition("```")[0])  # copied as a user would
    # the docs' example as a user runs it, pytest-benchmark's options at their defaults: with
    # this file's shortened ones (3 rounds of 0.02 s) its interval over 3 blocks read
    # 18x [1.7, 201] on a busy host, below the 2x it asserts
    example_run = pytester.runpytest_subprocess("test_docs_example.py", "--benchmark-only",
                                                "-p", "no:cacheprovider")
    example_run.assert_outcomes(passed=1)
    out = tmp_path / "out.json"
    result = pytester.runpytest_subprocess("test_user.py", "--benchmark-only",
                                           f"--benchmark-json={out}", "-ra",
                                           "-p", "no:cacheprovider", "--benchmark-max-time=0.02",
                                           "--benchmark-min-rounds=3")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*test_timeout_without_isolate*timeout needs isolate=True*",
        "*test_a_clash*device= is both an option of jit_benchmark and a parameter of*"])
    benches = {b["name"]: b for b in json.loads(out.read_text())["benchmarks"]}
    assert sorted(benches) == [f"test_donate_protocol_keyword[jax-{m}]"
                               for m in ("aot", "donate", "eager", "jit")] + [
        "test_isolated_keywords[jax-eager]", "test_isolated_keywords[jax-jit]"]
    assert all(b["stats"]["rounds"] >= 12 for n, b in benches.items() if "donate_" in n)
    assert benches["test_donate_protocol_keyword[jax-donate]"]["extra_info"]["status"] == "ok"
