"""A compiled Keras model measured as ``fit`` runs it (issue 64, item 2): each mode's time per
step inside fit's own loop and input pipeline (``model.fit`` timed per epoch, the modes taking
turns), the step alone (the rows' ``median_s``) beside it, what fit's loop adds to a step, and
the summary's first sentence the xla-over-graph speedup as fit runs them. A tiny 32-16-4 MLP:
nothing here asserts a speed, only that the figures exist and hang together."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jitbench
from jitbench.protocol.settings import Protocol

QUICK = Protocol(min_time=0.02, min_samples=5, warmup_max_time=1.0, budget=1.0)


def tiny_mlp(**compile_kw):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), **compile_kw)
    rng = np.random.default_rng(0)
    return model, rng.standard_normal((16, 32)).astype(np.float32), rng.integers(0, 4, 16)


def test_fit_steps_beside_the_step_alone_and_fits_loop_between_them():
    pytest.importorskip("keras")
    model, x, y = tiny_mlp()
    before = [w.copy() for w in model.get_weights()]
    # x, y: one batch. eager's fit is timed alike (tests/test_user_functions.py runs it)
    r = jitbench.measure(model, x, y, modes=["graph", "xla"], protocol=QUICK)
    rows = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in rows.items()} == {"graph": "ok", "xla": "ok"}, \
        r.summary()
    for mode in ("graph", "xla"):
        row = rows[mode]
        fit, alone, samples = row["keras_fit_step_s"], row["median_s"], row[
            "keras_fit_step_samples_s"]
        assert fit > 0 and alone > 0 and samples and min(samples) <= fit <= max(samples)
        assert row["keras_fit_timed"].startswith("the batch given (16 rows) 64 times: 64 steps "
                                                 "an epoch at batch_size 16")
        assert row["keras_fit_epoch_fixed_s"] >= 0
        assert math.isclose(row["keras_fit_loop_s"], fit - alone)
        # not timing-flaky: a step inside fit is the step and then some; half the step alone
        # is far below any noise seen on a busy 2-core host
        assert fit > 0.5 * alone, (mode, fit, alone)
        assert "keras_fit_traces" not in row  # counted only for a dataset (batch_size)
        # a 32-16-4 step is short: fit's loop (its iterator, pipeline, train function) is
        # most of a step in fit
        assert row["keras_fit_loop_s"] >= 0, (mode, row["keras_fit_loop_s"])
    xla = rows["xla"]
    assert xla["keras_fit_ci_low"] <= xla["keras_fit_ci_high"]
    assert xla["keras_fit_verdict"] in ("faster", "slower", "no difference")
    assert "keras_fit_speedup" not in rows["graph"]  # a baseline has none
    # what a test asserts on answers for fit too; the step alone on request
    sp = r.speedup("xla")
    assert (sp.timed, sp.baseline, sp.ratio, sp.low, sp.high, sp.verdict) == (
        "fit", "graph", xla["keras_fit_speedup"], xla["keras_fit_ci_low"],
        xla["keras_fit_ci_high"], xla["keras_fit_verdict"])
    assert r.verdict("xla") == xla["keras_fit_verdict"]
    alone = r.speedup("xla", step_alone=True)
    table = r.speedups()
    step = table[(table["mode"] == "xla") & (table["baseline"] == "graph")].iloc[0]
    assert (alone.timed, alone.ratio, alone.verdict) == ("call", step["speedup"], step["verdict"])
    assert r.verdict("xla", step_alone=True) == step["verdict"]
    summary = r.summary()
    # the headline is fit's; the step alone follows it
    assert summary.startswith("xla ") and summary.index("as fit runs them") < summary.index(
        "train_step alone: xla"), summary
    assert "a step in fit's loop against" in summary
    assert "of which fit's own loop and input pipeline take" in summary
    # the model as it came: weights, optimizer step, settings, no train function left behind
    assert all(np.array_equal(b, w) for b, w in zip(before, model.get_weights()))
    assert int(model.optimizer.iterations.numpy()) == 0
    assert model.jit_compile is False and model.run_eagerly is False
    assert model.train_function is None


def test_a_dataset_is_timed_as_its_own_epochs_with_the_models_steps_per_execution():
    pytest.importorskip("keras")
    model, _, _ = tiny_mlp(steps_per_execution=2)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((40, 32)).astype(np.float32), rng.integers(0, 4, 40)
    r = jitbench.measure(model, x, y, batch_size=8, modes=["graph", "xla"], protocol=QUICK)
    rows = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in rows.items()} == {"graph": "ok", "xla": "ok"}
    for row in rows.values():
        assert row["keras_fit_timed"].startswith("batch_size 8, 5 steps an epoch")
        assert "2 steps per call (steps_per_execution)" in row["keras_fit_timed"]
        assert row["keras_fit_traces"] == 1 and row["keras_fit_epoch_s"] > 0  # the first epoch
        assert row["keras_fit_step_s"] > 0 and "keras_fit_loop_s" in row
    assert isinstance(rows["xla"]["keras_fit_speedup"], float)


@pytest.mark.unit
def test_the_headline_says_slower_and_leaves_out_a_mode_without_a_baseline_in_fit():
    from jitbench.userfn.keras_fit import fit_sentences, with_fit_fields

    def row(mode, fit, alone, **more):
        return {"mode": mode, "framework": "tf", "status": "ok", "median_s": alone,
                "keras_fit_step_s": fit, "keras_fit_epoch_fixed_s": 0.02,
                "keras_fit_timed": "an epoch", **more}

    rows = with_fit_fields([row("graph", 0.002, 0.0015), row(
        "xla", 0.003, 0.001, keras_fit_speedup=2 / 3, keras_fit_ci_low=0.6,
        keras_fit_ci_high=0.7, keras_fit_verdict="slower")])
    assert math.isclose(rows[0]["keras_fit_loop_s"], 0.0005)
    (line,) = fit_sentences(rows)
    assert line.startswith("xla is 1.50× slower than graph as fit runs them [1.43–1.67]: "
                           "3 ms a step in fit's loop against 2 ms, of which fit's own loop "
                           "and input pipeline take 2 ms and 500 µs"), line
    assert fit_sentences(rows[1:]) == []  # no graph row timed in fit: nothing to compare
    # a mode whose step alone answered wrong: no speedup as fit runs it either
    wrong = with_fit_fields([rows[0], dict(rows[1], status="mismatch", error="max rel err 0.3")])
    assert fit_sentences(wrong) == []
    assert "keras_fit_verdict" not in wrong[1] and wrong[1]["keras_fit_step_s"] == 0.003
    # ...nor against a baseline whose step alone failed
    broken = with_fit_fields([dict(rows[0], status="runtime_error"), dict(rows[1])])
    assert fit_sentences(broken) == [] and "keras_fit_speedup" not in broken[1]
    assert with_fit_fields([dict(r) for r in rows])[1]["keras_fit_verdict"] == "slower"
    given = [dict(rows[0], status="runtime_error"), dict(rows[1])]
    before = [dict(r) for r in given]
    assert "keras_fit_verdict" not in with_fit_fields(given)[1]
    assert given == before  # the caller's rows keep their fields
    failed = {"mode": "xla", "framework": "tf", "keras_fit_error": "Keras runs this model "
              "with jit_compile=False where the mode asks for run_eagerly=False, "
              "jit_compile=True"}
    assert fit_sentences([failed]) == [f"xla in fit: {failed['keras_fit_error']}"]


@pytest.mark.unit
def test_a_keras_models_speedup_answers_for_fit_and_names_a_failed_fit():
    from jitbench.errors import UserError
    from jitbench.userfn.measure import Result

    def row(mode, **more):
        return {"mode": mode, "framework": "tf", "status": "ok", "median_s": 0.001,
                "samples_s": [0.001] * 8, "workload": "user", **more}

    fitted = Result([row("graph", keras_fit_step_s=0.002), row(
        "xla", keras_fit_step_s=0.001, keras_fit_speedup=2.0, keras_fit_ci_low=1.8,
        keras_fit_ci_high=2.2, keras_fit_verdict="faster")])
    sp = fitted.speedup("xla")
    assert (sp.mode, sp.baseline, sp.ratio, sp.low, sp.high, sp.verdict, sp.timed) == (
        "xla", "graph", 2.0, 1.8, 2.2, "faster", "fit")
    assert fitted.verdict("xla") == "faster"
    # as fit runs them, xla is compared with graph only; the step alone with any baseline
    three = Result([row("eager", keras_fit_step_s=0.01), *fitted.rows])
    with pytest.raises(UserError, match="compared with graph as fit runs them, not with eager"):
        three.speedup("xla", against="eager")
    assert three.speedup("xla", against="eager", step_alone=True).timed == "call"
    failed = Result([row("graph", keras_fit_step_s=0.002), row(
        "xla", keras_fit_error="Keras runs this model with jit_compile=False")])
    with pytest.raises(UserError, match="no speedup as fit runs it: Keras runs this model "
                                        "with jit_compile=False .step_alone=True"):
        failed.speedup("xla")
    assert failed.speedup("xla", step_alone=True).timed == "call"
    # a baseline whose fit failed, or that was not measured, is said, not read as the step
    for graph in ([row("graph", keras_fit_error="ValueError: bad")], []):
        lone = Result([*graph, row("xla", keras_fit_step_s=0.001)])
        with pytest.raises(UserError, match="graph in fit: (ValueError: bad|not timed in fit)"):
            lone.verdict("xla")
    # a baseline whose step alone answered wrong: no speedup as fit runs it, said with why
    wrong = Result([row("graph", keras_fit_step_s=0.002, status="mismatch",
                        error="max rel err 0.3"), *fitted.rows[1:]])
    with pytest.raises(UserError, match="graph's row is mismatch .max rel err 0.3; step_alone"):
        wrong.verdict("xla")
    assert "as fit runs them" not in wrong.summary()
    table = wrong.table().set_index("mode")  # nor in the table; fit's times stay
    assert "keras_fit_verdict" not in table.columns and table["keras_fit_step_s"]["xla"] == 0.001
    # the JAX backend: jit as fit runs it against eager; aot, which fit has not, the step alone
    jax_rows = [dict(r, framework="jax") for r in (
        row("eager", keras_fit_step_s=0.004), row(
            "jit", keras_fit_step_s=0.001, keras_fit_speedup=4.0, keras_fit_ci_low=3.5,
            keras_fit_ci_high=4.5, keras_fit_verdict="faster"), row("aot"))]
    on_jax = Result(jax_rows)
    assert (on_jax.speedup("jit").timed, on_jax.speedup("jit").baseline) == ("fit", "eager")
    assert on_jax.speedup("aot").timed == "call"
