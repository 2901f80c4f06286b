"""Your own function as you write it: arguments that are pytrees of arrays (a JAX MLP's list of
``(w, b)`` tuples, dicts, nests), the framework told from the arrays inside, outputs compared
leaf by leaf, and training steps that update state (a Keras model and its optimizer) checked
from the same saved state in every mode, never a false ``mismatch``."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitbench
from jitbench.errors import UserError
from jitbench.protocol import trees
from jitbench.protocol.settings import Protocol

QUICK = Protocol(min_time=0.02, min_samples=5, warmup_max_time=1.0, budget=1.0)
Pair = collections.namedtuple("Pair", "w b")

# user data: nests of dicts, lists, tuples, named tuples and None around arrays and statics
_leaf = st.one_of(
    st.integers(1, 4).map(lambda n: np.arange(n, dtype=np.float32)),
    st.integers(-3, 3), st.text("ab", max_size=2), st.none(),
    st.sampled_from([[], (), {}]))  # empty nests: no leaves at all
_tree = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, min_size=1, max_size=3), st.lists(inner, min_size=1, max_size=3).map(tuple),
    st.dictionaries(st.text("xyz", min_size=1, max_size=2), inner, min_size=1, max_size=3),
    st.tuples(inner, inner).map(lambda t: Pair(*t))), max_leaves=12)


@pytest.mark.unit
@settings(max_examples=60, deadline=None)
@given(_tree)
def test_every_leaf_is_found_at_its_path_and_arrays_are_mapped_in_place(tree):
    saved = sys.modules.pop("jax", None)  # the walker that needs no framework
    try:
        found = trees.leaves(tree)
        mapped = trees.map_arrays(lambda a: a + 1, tree)
        placed = iter(range(100))
        numbered = trees.map_arrays(lambda a: next(placed), tree)
    finally:
        if saved is not None:
            sys.modules["jax"] = saved
    paths = [p for p, _ in found]
    assert len(set(paths)) == len(paths)
    for path, leaf in found:
        assert _at(tree, path) is leaf
        assert type(_at(mapped, path)) is type(leaf)
        if trees.is_array(leaf):
            np.testing.assert_array_equal(_at(mapped, path), leaf + 1)
        else:
            assert _at(mapped, path) == leaf  # statics kept as they are
    arrays = [p for p, x in found if trees.is_array(x)]
    assert [_at(numbered, p) for p in arrays] == list(range(len(arrays)))


def _at(tree, path: str):
    """The leaf at ``path`` (Python subscripts such as ``[0]['w']``)."""
    return eval("t" + path, {}, {"t": tree})  # noqa: S307 -- a path the test's tree made


def _mlp(to):
    """Parameters as JAX's examples write them: a list of (w, b) tuples; a batch (x, y); each
    array made by ``to`` (``jnp.asarray``, ``tf.constant``, ``np.asarray``)."""
    rng = np.random.default_rng(0)
    params = [(to(rng.standard_normal((8, 16)).astype(np.float32) * 0.3),
               to(np.zeros(16, np.float32))),
              (to(rng.standard_normal((16, 1)).astype(np.float32) * 0.3),
               to(np.zeros(1, np.float32)))]
    batch = (to(rng.standard_normal((32, 8)).astype(np.float32)),
             to(rng.standard_normal((32, 1)).astype(np.float32)))
    return params, batch


def jax_update(params, batch):
    """One SGD step of an MLP: new parameters, the same nesting."""
    import jax
    import jax.numpy as jnp

    def loss(p, b):
        x, y = b
        for w, c in p[:-1]:
            x = jnp.tanh(x @ w + c)
        return jnp.mean((x @ p[-1][0] + p[-1][1] - y) ** 2)

    grads = jax.grad(loss)(params, batch)
    return [(w - 0.1 * dw, c - 0.1 * dc) for (w, c), (dw, dc) in zip(params, grads)]


def tf_update(params, batch):
    """The same SGD step in TensorFlow, on the same list of (w, b) tuples."""
    import tensorflow as tf

    flat = [t for pair in params for t in pair]
    with tf.GradientTape() as tape:
        tape.watch(flat)
        x, y = batch
        for w, c in params[:-1]:
            x = tf.tanh(x @ w + c)
        loss = tf.reduce_mean((x @ params[-1][0] + params[-1][1] - y) ** 2)
    grads = tape.gradient(loss, flat)
    return [(w - 0.1 * dw, c - 0.1 * dc)
            for (w, c), dw, dc in zip(params, grads[0::2], grads[1::2])]


def jax_dict_loss(params, batch):
    import jax.numpy as jnp

    h = jnp.tanh(batch["x"] @ params["layers"][0]["w"])
    return {"loss": jnp.mean((h @ params["layers"][1]["w"] - batch["y"]) ** 2), "h": h}


def tf_dict_loss(params, batch):
    import tensorflow as tf

    h = tf.tanh(batch["x"] @ params["layers"][0]["w"])
    return {"loss": tf.reduce_mean((h @ params["layers"][1]["w"] - batch["y"]) ** 2), "h": h}


def _dict_inputs(to):
    (w1, _), (w2, _) = _mlp(to)[0]
    x, y = _mlp(to)[1]
    return {"layers": [{"w": w1}, {"w": w2}]}, {"x": x, "y": y}


@pytest.mark.parametrize("framework", ["jax", "tf"])
def test_an_update_step_on_a_list_of_tuples_is_measured_without_naming_the_framework(framework):
    module = pytest.importorskip({"jax": "jax.numpy", "tf": "tensorflow"}[framework])
    params, batch = _mlp(module.asarray if framework == "jax" else module.constant)
    fn, modes = {"jax": (jax_update, ["eager", "jit"]), "tf": (tf_update, ["eager", "xla"])}[
        framework]
    r = jitbench.measure(fn, params, batch, modes=modes, protocol=QUICK)
    assert [row["status"] for row in r.rows] == ["ok", "ok"], r.summary()
    jit = next(row for row in r.rows if row["jit"])
    assert jit["framework"] == framework and jit["max_rel_err_vs_nojit"] < 1e-5
    assert jit["params"]["shapes"] == [[8, 16], [16], [16, 1], [1], [32, 8], [32, 1]]
    assert re.match(rf"{jit['mode']} (is|runs|against) .*eager", r.summary()), r.summary()


@pytest.mark.parametrize("framework", ["jax", "tf"])
def test_dict_and_nested_inputs_and_outputs_in_both_frameworks(framework):
    module = pytest.importorskip({"jax": "jax.numpy", "tf": "tensorflow"}[framework])
    fn = {"jax": jax_dict_loss, "tf": tf_dict_loss}[framework]
    params, batch = _dict_inputs(module.asarray if framework == "jax" else module.constant)
    modes = {"jax": ["eager", "jit"], "tf": ["eager", "xla"]}[framework]
    r = jitbench.measure(fn, params, batch, modes=modes, protocol=QUICK)
    assert [row["status"] for row in r.rows] == ["ok", "ok"], [row.get("error") for row in r.rows]
    assert {row["framework"] for row in r.rows} == {framework}
    # a reference that is wrong in one leaf: the mismatch names the leaf

    def wrong(params, batch):
        out = fn(params, batch)
        return {"loss": np.asarray(out["loss"]) + 1.0, "h": np.asarray(out["h"])}

    r = jitbench.measure(fn, params, batch, modes=modes[:1], protocol=QUICK, reference=wrong)
    assert r.rows[0]["status"] == "mismatch"
    assert "output differs from the reference (most at ['loss'])" in r.rows[0]["error"]


def test_inputs_of_two_frameworks_in_one_pytree_name_both_leaves():
    jnp = pytest.importorskip("jax.numpy")
    tf = pytest.importorskip("tensorflow")
    params, _ = _mlp(jnp.asarray)
    with pytest.raises(UserError, match=r"^inputs of mixed frameworks: argument 0 at \[0\]\[0\] is "
                                        r"a JAX \w+ and argument 0 at \[1\]\[0\] is a "
                                        r"TensorFlow \w+"):
        jitbench.measure(jax_update, [params[0], (tf.constant(1.0), 2)],
                         {"x": jnp.ones(3)})
    with pytest.raises(UserError, match=r"framework='tf', but argument 0 at \[0\]\[0\] is a JAX"):
        jitbench.measure(jax_update, params, framework="tf")


def test_numpy_pytrees_travel_to_an_isolated_worker():
    pytest.importorskip("jax")
    params, batch = _dict_inputs(np.asarray)
    r = jitbench.measure(jax_dict_loss, params, batch, framework="jax", modes=["eager", "jit"],
                         isolate=True, protocol=QUICK)
    assert [row["status"] for row in r.rows] == ["ok", "ok"], r.summary()


def keras_step():
    """The Keras training step of ``tests/user_code/keras_step.py``."""
    import importlib.util

    pytest.importorskip("keras")
    path = Path(__file__).parent / "user_code" / "keras_step.py"
    spec = importlib.util.spec_from_file_location("keras_step", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.keras_step()


def test_a_keras_training_step_is_checked_from_the_same_state_in_every_mode():
    step, x, y, model, opt = keras_step()
    before = [v.numpy().copy() for v in model.weights]
    r = jitbench.measure(step, x, y, modes=["eager", "graph", "xla"], protocol=QUICK)
    assert {row["mode"]: row["status"] for row in r.rows} == {
        "eager": "ok", "graph": "ok", "xla": "ok"}, r.summary()
    xla = next(row for row in r.rows if row["mode"] == "xla")
    assert xla["state"].startswith("14 variables saved before the first call")
    assert xla["max_rel_err_vs_nojit"] < 1e-4 and xla["n_samples"] >= 5
    # timing trained it step after step; the model and optimizer are left as they were
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, model.weights))
    assert int(opt.iterations.numpy()) == 0
    # a JIT mode that changes the update fails: tests/test_jit_fixture.py (test_keras_planted)


def test_state_that_cannot_be_saved_skips_the_check_and_says_why():
    tf = pytest.importorskip("tensorflow")
    calls = [0]

    def counting(x):  # Python state: each eager call scales by another number
        calls[0] += 1
        return x * float(calls[0])

    r = jitbench.measure(counting, tf.ones((4, 4)), modes=["eager", "xla"], protocol=QUICK)
    assert [row["status"] for row in r.rows] == ["ok", "ok"]
    assert all("answered differently" in row["check_skipped"] for row in r.rows)
    assert "outputs not checked: two calls with JIT off" in r.summary()


def power_iteration(a, v, n):
    """A loop whose trip count is a Python int: it must be static under jax.jit."""
    import jax.numpy as jnp

    for _ in range(n):
        v = a @ v
        v = v / jnp.linalg.norm(v)
    return v


def test_a_python_int_argument_is_static_and_every_mode_runs():
    jnp = pytest.importorskip("jax.numpy")
    a = jnp.asarray(np.random.default_rng(0).standard_normal((16, 16)), jnp.float32)
    r = jitbench.measure(power_iteration, a, jnp.ones(16, jnp.float32), 5, protocol=QUICK)
    assert {row["mode"]: row["status"] for row in r.rows} == {
        "eager": "ok", "jit": "ok", "aot": "ok"}, r.summary()
    assert all(row["static_argnums"] == [2] for row in r.rows)
    assert "arguments [2] passed as static" in r.summary()


@pytest.mark.parametrize("framework", ["jax", "tf"])
def test_an_already_jitted_function_is_measured_from_its_undecorated_form(framework):
    if framework == "jax":
        jax = pytest.importorskip("jax")
        jnp = jax.numpy
        jitted = jax.jit(power_iteration, static_argnums=2)
        args, modes, how = (jnp.eye(8, dtype=jnp.float32), jnp.ones(8, jnp.float32), 3), \
            ["eager", "jit"], "jax.jit"
    else:
        tf = pytest.importorskip("tensorflow")

        @tf.function(jit_compile=True)
        def jitted(x):
            return tf.nn.relu(x @ x) * 2.0

        args, modes, how = (tf.ones((8, 8)),), ["eager", "xla"], "tf.function(jit_compile=True)"
    r = jitbench.measure(jitted, *args, modes=modes, protocol=QUICK)
    assert [row["status"] for row in r.rows] == ["ok", "ok"], r.summary()
    assert {row["unwrapped"] for row in r.rows} == {how}
    assert r.summary().startswith(f"measured {r.rows[0]['workload']} as it was before {how}")
    if framework == "jax":  # eager ran op by op: a program per primitive, not the jit's one
        eager, jit = r.rows
        assert eager["first_compiles"] > 1 and jit["first_compiles"] == 1


@pytest.mark.e2e  # a user's script in a process of its own, as the fixture's user projects
def test_a_keras_model_on_the_jax_backend_is_measured_as_its_stateless_step():
    """Keras picks its backend once per process: the model is built and measured in a process
    of its own (tests/user_code/keras_jax_step.py)."""
    pytest.importorskip("keras")
    pytest.importorskip("jax")
    script = Path(__file__).parent / "user_code" / "keras_jax_step.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {row["mode"]: row for row in out["rows"]}
    assert {m: row["status"] for m, row in rows.items()} == {
        "eager": "ok", "jit": "ok", "aot": "ok"}, out["summary"]
    jit = rows["jit"]
    assert jit["framework"] == "jax" and jit["keras_backend"] == "jax"
    # logs and the whole new state (weights, Adam's slots, metric counters) against op by op
    assert jit["max_rel_err_vs_nojit"] < 1e-4
    assert jit["first_call_s"] > jit["median_s"]  # the trace and compile apart
    assert jit["keras_auto"].startswith("on: Keras jits the training step on the JAX backend")
    assert jit["keras_jit_compile"] == "jit_compile=True"
    assert out["weights_kept"] and out["iterations"] == 0  # the model left as it came
    assert "jit_compile='auto' is on" in out["summary"]
    # fit at batch_size 16 over 40 rows: jax.jit traces the full batch and the ragged one
    fit = {row["mode"]: row for row in out["fit"]}
    assert {m: row["status"] for m, row in fit.items()} == {"eager": "ok", "jit": "ok",
                                                              "aot": "ok"}
    assert fit["jit"]["keras_fit_traces"] == 2 and fit["aot"]["keras_fit"] is None
    assert out["weights_kept_after_fit"]


def test_a_compiled_keras_model_is_measured_as_fit_runs_its_training_step():
    keras = pytest.importorskip("keras")
    model, x, y = _user_module("keras_mlp").compiled_mlp()
    before = [w.copy() for w in model.get_weights()]
    r = jitbench.measure(model, x, y, protocol=QUICK)  # numpy inputs: no framework= needed
    assert {row["mode"]: row["status"] for row in r.rows} == {
        "eager": "ok", "graph": "ok", "xla": "ok"}, r.summary()
    xla = next(row for row in r.rows if row["mode"] == "xla")
    assert xla["framework"] == "tf" and xla["max_rel_err_vs_nojit"] < 1e-4
    assert xla["first_call_s"] > xla["median_s"]  # the first step (trace, compile) apart
    # optimizer slots, metric trackers and weights saved, checked after one step, put back
    assert re.match(r"\d+ variables saved before the first call", xla["state"])
    assert all(np.array_equal(b, w) for b, w in zip(before, model.get_weights()))
    assert int(model.optimizer.iterations.numpy()) == 0
    assert xla["keras_auto"].startswith("off: TensorFlow on a CPU-only machine")
    assert re.match(r"xla (is|runs|against) .*graph.*\[", r.summary()), r.summary()
    assert "jit_compile='auto' is off: TensorFlow on a CPU-only machine" in r.summary()
    uncompiled = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    with pytest.raises(UserError, match=r"not compiled: call model.compile"):
        jitbench.measure(uncompiled, x, y)


def test_a_donated_state_is_carried_from_call_to_call_and_the_donation_recorded():
    """``donate=0``: the params a step returns anew are donated in the ``donate`` mode (XLA
    reuses their buffers), every mode runs as a training loop calls it, a static int beside
    it stays static, and the user's own arrays are never donated."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.standard_normal((16, 16)), jnp.float32),
              "b": jnp.zeros(16, jnp.float32)}
    x = jnp.asarray(rng.standard_normal((8, 16)), jnp.float32)

    def step(params, x, n):
        def loss(p):
            h = x
            for _ in range(n):
                h = jnp.tanh(h @ p["w"] + p["b"])
            return jnp.mean(h ** 2)

        value, grads = jax.value_and_grad(loss)(params)
        return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, params, grads), value

    w0 = np.asarray(params["w"]).copy()
    r = jitbench.measure(step, params, x, 3, donate=0, protocol=QUICK)
    by_mode = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in by_mode.items()} == {
        "eager": "ok", "jit": "ok", "aot": "ok", "donate": "ok"}, r.summary()
    assert by_mode["donate"]["donation_held"] == "2 of 2"  # both buffers of the params
    assert "donation_held" not in by_mode["jit"]
    # the new params and the loss after one step from the same start, against op by op
    assert by_mode["donate"]["max_rel_err_vs_nojit"] < 1e-4
    assert by_mode["donate"]["static_argnums"] == [2]  # the user's position of n
    assert not params["w"].is_deleted() and np.array_equal(np.asarray(params["w"]), w0)
    assert "XLA reused 2 of 2 of the donated state's buffers" in r.summary()
    with pytest.raises(UserError, match=r"must return argument 0's new value"):
        jitbench.measure(lambda p, x: (jnp.sum(p["w"]),), params, x, donate=0)
    with pytest.raises(UserError, match=r"donate=2: argument 2 holds no array"):
        jitbench.measure(step, params, x, 3, donate=2)
    with pytest.raises(UserError, match=r"donate=5: give the position"):
        jitbench.measure(step, params, x, 3, donate=5)


def test_a_jitted_steps_own_donation_is_measured_or_said_to_be_left_out():
    """``jax.jit(step, donate_argnums=0)``: measured as ``donate=0`` would be (the step
    returns argument 0 anew); a jit that donates what its function does not return has its
    donation left out, and the summary says so and why."""
    import functools

    import jax
    import jax.numpy as jnp

    w = jnp.ones((8, 8), jnp.float32)
    x = jnp.ones((4, 8), jnp.float32)

    @functools.partial(jax.jit, donate_argnums=0)
    def step(w, x):
        return w - 0.01 * (x.T @ jnp.tanh(x @ w)), jnp.sum(w)

    r = jitbench.measure(step, w, x, protocol=QUICK)
    by_mode = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in by_mode.items()} == {
        "eager": "ok", "jit": "ok", "aot": "ok", "donate": "ok"}, r.summary()
    assert by_mode["donate"]["donation_held"] == "1 of 1"
    assert "as it was before jax.jit(donate_argnums=0)" in r.summary()
    assert not w.is_deleted()  # the user's array is never donated

    @functools.partial(jax.jit, donate_argnums=0)
    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w))

    r = jitbench.measure(loss, w, x, protocol=QUICK)
    assert {row["mode"] for row in r.rows} == {"eager", "jit", "aot"}, r.summary()
    assert "jax.jit(donate_argnums=0); its donation left out: the function must return " \
           "argument 0's new value" in r.summary()


def test_a_keras_fit_epoch_is_run_per_mode_and_its_traces_counted():
    """``batch_size``: x, y a dataset as fit gets it (40 rows, batches of 16: the last of 8).
    On TensorFlow fit's data pipeline leaves the batch dimension unknown, so one trace of the
    step serves the ragged batch too (on JAX it is a second trace: the script test); eager runs
    it as Python (no traces counted). The model comes back as it went, its settings included."""
    pytest.importorskip("keras")
    model, _, _ = _user_module("keras_mlp").compiled_mlp()
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((40, 8)).astype(np.float32), rng.integers(0, 3, 40)
    before = [w.copy() for w in model.get_weights()]
    r = jitbench.measure(model, x, y, batch_size=16, protocol=QUICK)
    rows = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in rows.items()} == {
        "eager": "ok", "graph": "ok", "xla": "ok"}, r.summary()
    assert rows["xla"]["size"].startswith("16x8")  # the step measured on the first batch
    assert rows["graph"]["keras_fit"] == "batch_size 16, 3 steps, the last of 8 rows (a new shape)"
    assert rows["graph"]["keras_fit_traces"] == rows["xla"]["keras_fit_traces"] == 1
    assert "keras_fit_traces" not in rows["eager"] and rows["eager"]["keras_fit_epoch_s"] > 0
    assert re.search(r"one epoch of fit per mode \(batch_size 16, 3 steps, the last of 8 rows "
                     r"\(a new shape\)\): eager [^;]+; graph 1 trace\(s\), ", r.summary())
    assert all(np.array_equal(b, w) for b, w in zip(before, model.get_weights()))
    assert int(model.optimizer.iterations.numpy()) == 0
    assert model.jit_compile is False and model.run_eagerly is False  # as compiled on a CPU
    with pytest.raises(UserError, match=r"batch_size=64: give the batch size fit uses"):
        jitbench.measure(model, x, y, batch_size=64)
    # steps_per_execution: fit's epoch runs with it, and the rows say the step is one a call
    model, _, _ = _user_module("keras_mlp").compiled_mlp(steps_per_execution=2)
    r = jitbench.measure(model, x, y, batch_size=16, modes=["graph"], protocol=QUICK)
    (row,) = r.rows
    assert row["status"] == "ok" and row["keras_steps_per_execution"] == 2, r.summary()
    assert row["keras_fit"].endswith(", 2 per call (steps_per_execution)")
    assert "fit runs 2 steps per call (steps_per_execution)" in r.summary()
    with pytest.raises(UserError, match=r"batch_size=16 goes with a Keras model"):
        jitbench.measure(lambda a: a * 2, x, framework="tf", batch_size=16)


def _user_module(name: str):
    """A module of tests/user_code/ (where users' code lives, outside the test package)."""
    import importlib.util

    path = Path(__file__).parent / "user_code" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flax_steps():
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    return _user_module("flax_steps")


def test_a_flax_linen_train_state_step_with_optax_in_every_mode():
    step, state, batch = _flax_steps().linen_step()
    r = jitbench.measure(step, state, batch, protocol=QUICK)
    assert {row["mode"]: row["status"] for row in r.rows} == {
        "eager": "ok", "jit": "ok", "aot": "ok"}, r.summary()
    jit = next(row for row in r.rows if row["mode"] == "jit")
    # the whole returned state compared leaf by leaf (params, Adam's moments, the step)
    assert jit["max_rel_err_vs_nojit"] < 1e-4 and not jit.get("check_skipped")
    assert "static_argnums" not in jit  # apply_fn and tx are the TrainState's static fields


def test_an_nnx_step_that_changes_its_model_in_place_is_measured_op_by_op_and_under_nnx_jit():
    import jax

    step, model, optimizer, x, y = _flax_steps().nnx_step()
    from flax import nnx

    before = jax.tree_util.tree_map(np.asarray, nnx.state((model, optimizer)).to_pure_dict())
    r = jitbench.measure(step, model, optimizer, x, y, protocol=QUICK)
    assert {row["mode"]: row["status"] for row in r.rows} == {"eager": "ok", "jit": "ok"}, \
        r.summary()
    jit = next(row for row in r.rows if row["mode"] == "jit")
    assert jit["unwrapped"] == "nnx.jit" and jit["max_rel_err_vs_nojit"] < 1e-4
    assert jit["state"].startswith("2 variables saved") and not jit.get("check_skipped")
    after = jax.tree_util.tree_map(np.asarray, nnx.state((model, optimizer)).to_pure_dict())
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(before),
                                                    jax.tree_util.tree_leaves(after)))
    with pytest.raises(UserError, match=r"changes flax NNX objects in place runs in eager, jit"):
        jitbench.measure(step, model, optimizer, x, y, modes=["aot"])
