"""The transformer block workload: its float64 reference's hand-written backward against
finite differences (framework-free), and every quick case ``ok`` in both frameworks against
that reference."""

from __future__ import annotations

import numpy as np
import pytest

from suites import transformer as tb

TINY = dict(batch=2, seq=5, model=8, heads=2)


@pytest.mark.unit
@pytest.mark.parametrize("name", tb.NAMES)
def test_the_references_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(1)
    x, w = tb.inputs(TINY, np.float64, rng)
    _, grads = tb.loss_and_grads64(x, w, TINY["heads"])
    flat = w[name].reshape(-1)
    for i in rng.choice(flat.size, size=min(4, flat.size), replace=False):
        old, h = flat[i], 1e-6
        flat[i] = old + h
        up = float((tb.forward64(x, w, TINY["heads"])[0] ** 2).mean())
        flat[i] = old - h
        down = float((tb.forward64(x, w, TINY["heads"])[0] ** 2).mean())
        flat[i] = old
        numeric = (up - down) / (2 * h)
        assert abs(grads[name].reshape(-1)[i] - numeric) <= 1e-6 + 1e-5 * abs(numeric), \
            (name, i, grads[name].reshape(-1)[i], numeric)


@pytest.mark.unit
def test_the_mask_is_causal_a_later_position_never_moves_an_earlier_output():
    rng = np.random.default_rng(2)
    x, w = tb.inputs(TINY, np.float64, rng)
    y = tb.forward64(x, w, TINY["heads"])[0]
    x2 = x.copy()
    x2[:, -1] += 1.0  # the last position changed
    y2 = tb.forward64(x2, w, TINY["heads"])[0]
    assert np.allclose(y[:, :-1], y2[:, :-1]) and not np.allclose(y[:, -1], y2[:, -1])


def test_every_mode_of_the_smallest_block_is_ok_in_both_frameworks(tmp_path):
    """``jitbench run --suite transformer`` at its smallest size, forward and training step:
    every case ``ok`` against the float64 reference (the quick grid's larger size: the note)."""
    from jitbench.define.workload import Filters, expand
    from jitbench.protocol.settings import Protocol
    from jitbench.run import runner

    fast = Protocol(min_time=0.02, min_samples=3, max_samples=20, max_time=1.0,
                    warmup_max_time=0.5, budget=0.5, block_time=0.1)
    cases = [c for c in expand(Filters(suite=("transformer",), device=("cpu",)))
             if c.size == tb._size(tb.GRID["quick"][0])]
    assert {(c.framework, c.variant) for c in cases} == {
        (f, v) for f in ("jax", "tf") for v in ("forward", "train")}
    run_dir = runner.run(cases, tmp_path, protocol=fast, command=["pytest"])
    import json

    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in rows) == sorted(c.case_id for c in cases)
    assert {r["case_id"]: r["status"] for r in rows if r["status"] != "ok"} == {}
    # ok: within the tolerance of the float64 reference, which every row was checked against
    assert all(isinstance(r.get("max_abs_err"), float) for r in rows)
    assert {r["dtype"] for r in rows} == {"float32", "bfloat16"}


@pytest.mark.unit
def test_the_block_is_left_out_of_a_run_that_names_no_suite():
    from jitbench.define.workload import Filters, expand

    assert not [c for c in expand(Filters(device=("cpu",))) if c.workload == "transformer"]
    assert expand(Filters(suite=("transformer",), device=("cpu",)))
