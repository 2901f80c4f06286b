"""The training-step workload: its float64 reference (gradients against finite differences),
the modes it runs in, and its state: carried from call to call, restarted for the check, and
compared after k steps so that a step that forgets an update is a mismatch."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitbench.define.workload import Case, Filters, expand
from suites import train_step as ts

TINY = {"mlp": dict(model="mlp", batch=4, width=6), "cnn": dict(model="cnn", batch=2, channels=2)}


def _loss(model, x, y, p, variant):
    opt = {"t": 0, "m": {k: 0 * v for k, v in model["params"].items()},
           "v": {k: 0 * v for k, v in model["params"].items()}}
    return ts._step64(model, opt, x, y, p, variant)


def _data(p):
    x, y = ts.inputs(p, "float64", np.random.default_rng(1))
    model = {part: {k: v.astype(np.float64) for k, v in d.items()}
             for part, d in ts.initial_model(p, "sgd-bn_train").items()}
    return x, y, model


@pytest.mark.unit
@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("bn", ["bn_train", "bn_infer", "no_bn"])
def test_the_reference_gradient_matches_finite_differences(model, bn):
    p, variant = TINY[model], f"sgd-{bn}"
    x, y, _ = _data(p)
    start = {part: {k: v.astype(np.float64) for k, v in d.items()}
             for part, d in ts.initial_model(p, variant).items()}
    if bn == "bn_infer":  # frozen statistics that are not the identity
        start["stats"] = {k: v + (0.3 if k.endswith("/mean") else 0.5)
                          for k, v in start["stats"].items()}
    _, after, _ = _loss(start, x, y, p, variant)
    rng = np.random.default_rng(2)
    for key, w in start["params"].items():
        grad = (w - after["params"][key]) / ts.SGD_LR  # SGD: w' = w - lr * g
        for _ in range(3):
            i = tuple(rng.integers(0, s) for s in w.shape)
            h = 1e-6
            plus, minus = ({**start, "params": dict(start["params"])} for _ in range(2))
            plus["params"][key] = w.copy()
            plus["params"][key][i] += h
            minus["params"][key] = w.copy()
            minus["params"][key][i] -= h
            numeric = (_loss(plus, x, y, p, variant)[0] - _loss(minus, x, y, p, variant)[0]) / 2 / h
            assert grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-7), (key, i)


@pytest.mark.unit
def test_the_reference_moves_batch_norm_statistics_only_when_training():
    p = TINY["mlp"]
    x, y, _ = _data(p)
    for variant, moved in (("adam-bn_train", True), ("adam-bn_infer", False)):
        loss, model = ts.reference((x, y), p, variant)
        start = ts.initial_model(p, variant)
        same = all(np.array_equal(model["stats"][k], start["stats"][k]) for k in start["stats"])
        assert same is not moved
        assert np.isfinite(loss)


@pytest.mark.unit
def test_training_steps_run_in_every_mode_and_donation_only_for_them():
    cases = expand(Filters(suite=("train_step", "mmd"), device=("cpu",)))
    modes = {(w, f): {c.mode for c in cases if c.workload == w and c.framework == f}
             for w in ("train_step", "mmd") for f in ("tf", "jax")}
    assert modes[("train_step", "jax")] == {"eager", "jit", "aot", "donate"}
    assert modes[("train_step", "tf")] == {"eager", "graph", "xla", "autoclustering"}
    assert "donate" not in modes[("mmd", "jax")]
    variants = {c.variant for c in cases if c.workload == "train_step"}
    assert variants == {f"{o}-{b}" for o in ("sgd", "adam")
                        for b in ("bn_train", "bn_infer", "no_bn")}
    assert {c.params["model"] for c in cases if c.workload == "train_step"} == {"mlp", "cnn"}


def _work(framework, p, variant):
    from jitbench.frameworks import get_adapter
    from jitbench.protocol.case_setup import Casework, workload_inputs, workload_reference

    adapter = get_adapter(framework)
    case = Case("train_step", variant, ts._size(p), json.dumps(p, sort_keys=True), "float32",
                framework, "cpu", "eager")
    inputs = workload_inputs(ts.WORKLOAD, case)
    return Casework(adapter, framework, "cpu", inputs, workload_reference(ts.WORKLOAD, case,
                                                                          inputs),
                    *ts.WORKLOAD.tolerance["float32"])


@pytest.mark.parametrize("mode", ["eager", "jit", "donate", "aot"])
def test_jax_state_is_carried_between_calls_and_restarted_for_the_check(mode):
    p = TINY["cnn"]
    work = _work("jax", p, "adam-bn_train")
    fn = work.build(ts.jax_stages(p, "float32", "adam-bn_train"), mode)
    losses = [float(fn(*work.placed)) for _ in range(4)]
    assert len(set(losses)) == 4  # the state moved: every step starts where the last ended
    first = work.check(work.answer(fn))
    second = work.check(work.answer(fn))  # from the initial state again, not from step 7
    assert first.mismatch is None and second.mismatch is None
    assert first.fields == second.fields


def test_a_step_that_forgets_an_update_is_a_mismatch():
    from jitbench.frameworks import TrainStep

    p = TINY["mlp"]
    work = _work("jax", p, "sgd-bn_train")
    right = ts.jax_stages(p, "float32", "sgd-bn_train")[0]

    def make():
        step, state = right.make()

        def frozen_statistics(state, x, y):  # the moving statistics never updated
            loss, new = step(state, x, y)
            new["model"]["stats"] = state["model"]["stats"]
            return loss, new

        return frozen_statistics, state

    checked = work.check(work.answer(work.build([TrainStep(make, shown=right.shown)], "jit")))
    assert checked.mismatch and "float64 reference" in checked.mismatch


def test_tf_variables_are_updated_in_place_and_restarted():
    p = TINY["mlp"]
    work = _work("tf", p, "adam-bn_infer")
    fn = work.build(ts.tf_stages(p, "float32", "adam-bn_infer"), "xla")
    losses = [float(fn(*work.placed)) for _ in range(3)]
    assert len(set(losses)) == 3
    first, second = (work.check(work.answer(fn)) for _ in range(2))
    assert first.mismatch is None and first.fields == second.fields


@pytest.mark.unit
def test_a_training_steps_sample_waits_for_its_state_not_only_its_loss():
    """Where the adapter says a step's state is still pending (JAX), the timed call's sync
    waits for the loss and that state together."""
    from jitbench.frameworks import Stepping, TrainStep
    from jitbench.protocol.case_setup import Casework

    synced = []

    class Recorder:  # only what Casework needs, and the sync it is given
        @staticmethod
        def place(arrays, device):
            return list(arrays)

        @staticmethod
        def sync(out):
            synced.append(out)

        @staticmethod
        def dispatches_ahead(device):
            return True

    state = {"w": "the new state"}
    step = Stepping(lambda x: "loss", lambda: None, lambda: state, TrainStep(lambda: None),
                    pending=lambda: state)
    timed = Casework(Recorder(), "jax", "cpu", [1.0]).timed("eager", step)
    timed.sync(timed.call())
    assert synced == [("loss", state)]
    plain = Casework(Recorder(), "jax", "cpu", [1.0]).timed("jit", lambda x: "out")
    plain.sync(plain.call())
    assert synced[-1] == "out"
