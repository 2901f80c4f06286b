"""The option objects of ``jitbench.measure`` and the ``jit_benchmark`` fixture
(``jitbench.Tolerances``, ``jitbench.Sampling``): what they accept, what they refuse and how,
what they change in the protocol, and their shorthand keywords (``rtol=``, ``atol=``,
``precision=``, ``budget=``). No framework is imported: the objects are plain data; a real
measurement with them is in tests/test_api.py."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jitbench
from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol
from jitbench.userfn.options import Sampling, Tolerances, option_objects

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("precision, budget, expect", [
    (0.1, None, (0.1, 6.0)), ("off", 2, (None, 2.0)), ("OFF", None, (None, 6.0)),
    (None, 3.5, (0.05, 3.5)), (None, None, (0.05, 6.0))])
def test_precision_and_budget_override_the_protocol(precision, budget, expect):
    p = Sampling(precision, budget).applied_to(Protocol())
    assert (p.precision, p.budget) == expect


@pytest.mark.parametrize("precision, budget, named", [
    (5, None, "precision=5"), (0, None, "precision=0"), ("5%", None, "precision='5%'"),
    (True, None, "precision=True"), (None, 0, "budget=0"), (None, float("nan"), "budget=nan"),
    (None, "6", "budget='6'")])
def test_bad_precision_or_budget_is_one_user_error_naming_it(precision, budget, named):
    with pytest.raises(UserError, match=re.escape(named)):
        Sampling(precision, budget)


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3),
                 st.booleans(), st.text(max_size=5)))
def test_a_precision_is_a_fraction_in_0_1_or_off_and_anything_else_is_named(value):
    fraction = (isinstance(value, (int, float)) and not isinstance(value, bool)
                and 0 < value < 1)
    off = isinstance(value, str) and value.strip().lower() == "off"
    if not (fraction or off):
        with pytest.raises(UserError, match=re.escape(f"precision={value!r}")):
            Sampling(precision=value)
        return
    p = Sampling(precision=value).applied_to(Protocol())
    assert p.precision == (None if off else float(value))
    assert dataclasses.replace(p, precision=Protocol().precision) == Protocol()  # nothing else


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3)))
def test_a_tolerance_is_a_number_at_least_0_and_anything_else_is_named(value):
    if isinstance(value, (int, float)) and value >= 0:
        assert Tolerances(rtol=value, atol=value).against(None, "float32") == (value, value)
        return
    for field in ("rtol", "atol"):
        with pytest.raises(UserError, match=re.escape(f"{field} must be a number ≥ 0, not "
                                                      f"{value!r}")):
            Tolerances(**{field: value})


def test_the_objects_are_frozen_and_exported_by_the_package():
    assert jitbench.Tolerances is Tolerances and jitbench.Sampling is Sampling
    with pytest.raises(dataclasses.FrozenInstanceError):
        Sampling().budget = 1  # type: ignore[misc]
    assert {Tolerances(1e-2), Tolerances(1e-2)} == {Tolerances(rtol=1e-2)}  # hashable


def test_default_tolerances_follow_the_dtype_and_the_largest_jit_off_value():
    out = np.array([1.0, -4.0, np.inf, np.nan], np.float32)
    assert Tolerances().against(out, "float32") == (1e-3, 4e-3)
    assert Tolerances().against(out, "float64") == (1e-7, 4e-7)
    assert Tolerances().against(None, "bfloat16") == (1e-2, 1e-2)  # nothing to scale by
    assert Tolerances(rtol=0.1).against(out, "int8") == (0.1, 0.4)
    assert Tolerances(atol=0.5).against(out, "float32") == (1e-3, 0.5)


def test_the_shorthand_makes_the_same_objects():
    assert option_objects(rtol=0.1, atol=0.2, precision="off", budget=2) == (
        Tolerances(rtol=0.1, atol=0.2), Sampling(precision="off", budget=2))
    objects = (Tolerances(rtol=0.1), Sampling(budget=2))
    assert option_objects(*objects) == objects
    assert option_objects() == (Tolerances(), Sampling())


@pytest.mark.parametrize("call, says", [
    (lambda: option_objects(Tolerances(rtol=0.1), rtol=0.2),
     ("rtol= is given beside tolerances=: put it in tolerances=jitbench.Tolerances(rtol=..., "
      "atol=...), or give rtol=, atol= alone")),
    (lambda: option_objects(sampling=Sampling(budget=2), precision=0.1),
     "precision= is given beside sampling=: put it in sampling=jitbench.Sampling("),
    (lambda: option_objects(tolerances={"rtol": 0.1}),
     "tolerances={'rtol': 0.1}: give a jitbench.Tolerances(rtol=..., atol=...)"),
    (lambda: option_objects(sampling=0.05),
     "sampling=0.05: give a jitbench.Sampling(precision=..., budget=...)"),
])
def test_an_object_of_another_type_or_a_shorthand_beside_its_object_is_one_user_error(call,
                                                                                      says):
    with pytest.raises(UserError, match=re.escape(says)):
        call()


def test_measure_refuses_them_before_anything_runs():
    """Before the framework is told from the inputs: numpy inputs and no ``framework``."""
    x = np.ones(3, np.float32)
    with pytest.raises(UserError, match=re.escape("budget= is given beside sampling=")):
        jitbench.measure(np.tanh, x, sampling=jitbench.Sampling(precision=0.1), budget=2)
    with pytest.raises(UserError, match=re.escape("atol must be a number ≥ 0, not -1.0")):
        jitbench.measure(np.tanh, x, atol=-1.0)
    with pytest.raises(UserError, match=re.escape("tolerances=0.1: give a jitbench.Tolerances")):
        jitbench.measure(np.tanh, x, tolerances=0.1)
