"""The output check at the precision a device computes float32 products at: TF32's 10-bit
mantissas pass where the precision is tf32 and fail where it is float32, and a JIT output far
less accurate than its JIT-off mode fails at either."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jitbench.frameworks import effective_precision
from jitbench.protocol.case_setup import Casework
from jitbench.protocol.correctness import compare, far_above, normwise_bound

pytestmark = pytest.mark.unit  # no child process, no framework import


class NumpyAdapter:
    """Only what Casework needs to place and read numpy arrays: no framework."""

    @staticmethod
    def place(arrays, device):
        return [np.asarray(a) for a in arrays]

    @staticmethod
    def to_numpy(out):
        return np.asarray(out)


def as_tf32(x):
    """float32 rounded to nearest (ties to even) at 10 mantissa bits, as TF32 tensor cores
    read their inputs."""
    bits = np.asarray(x, np.float32).copy().view(np.uint32)
    bits += np.uint32(0x0FFF) + ((bits >> np.uint32(13)) & np.uint32(1))
    bits &= np.uint32(0xFFFFE000)
    return bits.view(np.float32)


@pytest.fixture(scope="module")
def matmul():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256)).astype(np.float32)
    b = rng.standard_normal((256, 64)).astype(np.float32)
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0.0)
    return a, b, ref


def work(ref, precision):
    # matmul_relu's own float32 tolerance and reduction length (k = 256)
    return Casework(NumpyAdapter(), "jax", "gpu", [], ref, 1e-3, 1e-3, precision=precision,
                    reduction=256)


def test_tf32_rounding_is_within_tf32_and_not_within_float32(matmul):
    a, b, ref = matmul
    out = np.maximum(as_tf32(a) @ as_tf32(b), 0.0)
    assert np.abs(as_tf32(a) - a).max() > 0  # the rounding really happened
    assert work(ref, "tf32").check(out).mismatch is None
    text = work(ref, "float32").check(out).mismatch
    assert text and "float64 reference" in text
    full = np.maximum(a @ b, 0.0)  # true float32 passes at both
    assert work(ref, "float32").check(full).mismatch is None
    assert work(ref, "tf32").check(full).mismatch is None


def test_a_jit_output_ten_times_its_nojit_error_fails_at_either_precision(matmul):
    a, b, ref = matmul
    nojit = np.maximum(as_tf32(a) @ as_tf32(b), 0.0)  # the JIT-off mode, at TF32
    jit = ref + 12.0 * (nojit - ref)  # the same kind of error, twelve times as large
    for precision in ("tf32", "float32"):
        checked = work(ref, precision).check(jit, nojit, "eager")
        assert checked.mismatch, precision
    # at tf32 it is not the bound that catches it: the normwise error is within it
    assert compare(jit, ref, 1e-3, 1e-3, "tf32", 256)["within"]
    assert "JIT off" in work(ref, "tf32").check(jit, nojit, "eager").mismatch
    # the JIT-off answer itself, and one 3x as far off, pass at tf32
    assert work(ref, "tf32").check(nojit, nojit, "eager").mismatch is None
    assert work(ref, "tf32").check(ref + 3.0 * (nojit - ref), nojit, "eager").mismatch is None


def test_row_fields_carry_the_normwise_error(matmul):
    a, b, ref = matmul
    fields = work(ref, "tf32").check(np.maximum(as_tf32(a) @ as_tf32(b), 0.0)).fields
    assert 1e-5 < fields["norm_rel_err"] < normwise_bound("tf32", 256)
    assert fields["max_rel_err"] > 0


def test_far_above_takes_the_nojit_error_as_at_least_what_a_correct_answer_carries():
    # native precision: another summation order (K terms) may move a result by 4u*sqrt(K)
    u = 2.0 ** -24
    assert not far_above(30 * u, 0.0, "float32")  # an exact JIT-off answer by luck
    assert far_above(50 * u, 0.0, "float32")
    assert not far_above(200 * u, 0.0, "float32", reduction=64)  # 4u*8 = 32u, x10
    assert far_above(400 * u, 0.0, "float32", reduction=64)
    assert not far_above(1e-15, 0.0, "float64")  # a reordered float64 sum
    # reduced precision: rounding the inputs dominates, half a unit roundoff is the floor
    assert far_above(3e-3, 2e-4, "tf32") and not far_above(1.5e-3, 2e-4, "tf32")


@pytest.mark.parametrize("dtype, device, full, cc, expected", [
    ("float32", "gpu", False, 9.0, "tf32"),  # H100 / H200 at the frameworks' default
    ("float32", "gpu", False, 8.0, "tf32"),  # A100
    ("float32", "gpu", False, 7.0, "float32"),  # V100: no TF32
    ("float32", "gpu", True, 9.0, "float32"),  # --matmul-precision highest
    ("float32", "cpu", False, None, "float32"),
    ("float64", "gpu", False, 9.0, "float64"),
    ("bfloat16", "gpu", False, 9.0, "bf16"),
])
def test_effective_precision(dtype, device, full, cc, expected):
    assert effective_precision(dtype, device, full, cc) == expected


def test_an_unknown_precision_names_the_valid_ones():
    with pytest.raises(ValueError, match="tf32"):
        normwise_bound("fp8")


# compare() writes its temporaries in place (an 8M-value output's fresh arrays cost more than
# its arithmetic); its answer must stay the textbook formulas' on 1-d outputs of any values
# (NaN, inf, empty; far from the reference or near its tolerance's edge) and on a pytree
_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                    st.floats(-1e6, 1e6, width=64))


def _textbook(out, ref, rtol, atol):
    o = np.concatenate([np.asarray(x, np.float64).ravel() for x in out]) \
        if isinstance(out, tuple) else np.asarray(out, np.float64).ravel()
    r = np.concatenate([np.asarray(x, np.float64).ravel() for x in ref]) \
        if isinstance(ref, tuple) else np.asarray(ref, np.float64).ravel()
    inf = float("inf")
    if not np.all(np.isfinite(o)) and np.all(np.isfinite(r)):
        return {"max_abs_err": inf, "max_rel_err": inf, "norm_rel_err": inf, "within": False}
    with np.errstate(all="ignore"):
        diff = np.abs(o - r)
        max_abs = float(diff.max()) if diff.size else 0.0
        scale = float(np.abs(r).max()) if r.size else 0.0
        norm_ref = float(np.linalg.norm(r)) if r.size else 0.0
        norm_diff = float(np.linalg.norm(diff)) if diff.size else 0.0
        return {"max_abs_err": max_abs,
                "max_rel_err": max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else inf),
                "norm_rel_err": norm_diff / norm_ref if norm_ref > 0
                else (0.0 if norm_diff == 0 else inf),
                "within": bool(np.all(diff <= atol + rtol * np.abs(r)))}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf, as in any check
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_values, _values, st.floats(-2e-3, 2e-3), st.floats(-2e-2, 2e-2)),
                min_size=0, max_size=40),
       st.sampled_from(["far", "near", "pytree"]),
       st.sampled_from([0.0, 1e-5, 1e-3]), st.sampled_from([0.0, 1e-6, 1e-2]),
       st.sampled_from([np.float32, np.float64]))
def test_compare_is_the_textbook_formulas(rows, kind, rtol, atol, dtype):
    ref = np.array([r for _, r, _, _ in rows], dtype=np.float64)
    if kind == "far":
        out = np.array([o for o, _, _, _ in rows]).astype(dtype)
    else:  # within a few tolerances of the reference, where `within` flips
        with np.errstate(all="ignore"):
            out = np.array([r * (1 + e) + d for _, r, e, d in rows]).astype(dtype)
    out_before, ref_before = out.copy(), ref.copy()
    if kind == "pytree":  # two leaves, as a training step's state
        half = len(rows) // 2
        got = compare((out[:half], out[half:]), (ref[:half], ref[half:]), rtol, atol)
        want = _textbook((out[:half], out[half:]), (ref[:half], ref[half:]), rtol, atol)
    else:
        got, want = compare(out, ref, rtol, atol), _textbook(out, ref, rtol, atol)
    for key, value in want.items():
        np.testing.assert_equal(got[key], value, err_msg=key)
    assert np.array_equal(out, out_before, equal_nan=True)  # neither written through a view
    assert np.array_equal(ref, ref_before, equal_nan=True)


def test_the_nojit_error_is_computed_once_per_answer(matmul, monkeypatch):
    from jitbench.protocol import case_setup

    a, b, ref = matmul
    nojit = np.maximum(as_tf32(a) @ as_tf32(b), 0.0)
    calls = []
    real = case_setup.compare
    monkeypatch.setattr(case_setup, "compare",
                        lambda o, r, *a, **k: calls.append(o is nojit) or real(o, r, *a, **k))
    w = work(ref, "tf32")
    first = [w.check(nojit * f, nojit, "eager").mismatch for f in (1.0, 1.0001, 1.0002)]
    assert calls.count(True) == 1  # its own error, once for the three checks
    other = ref + 20.0 * (nojit - ref)  # another JIT-off answer, far worse: no stale error
    assert w.check(ref + 30.0 * (nojit - ref), other, "eager").mismatch is None
    assert first == [None, None, None]
    assert work(ref, "tf32").check(ref + 30.0 * (nojit - ref), nojit, "eager").mismatch
