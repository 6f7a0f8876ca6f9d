"""``hidden_values.same`` is total: for any value the agent's code could return (huge ints,
``1e308``, NaN, infinities, ``-0.0``, Decimal extremes, nesting, strings with surrogates)
it answers True or False and never raises; ``approx`` is decided exactly."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.spec.hidden_values import ValueFormError, decode, same, show

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "200"))

_EXTREME_DECIMALS = st.builds(
    lambda sign, digits, exponent: Decimal((sign, digits, exponent)),
    st.integers(0, 1),
    st.lists(st.integers(0, 9), min_size=1, max_size=40).map(tuple),
    st.sampled_from([-999999999999999, -(10**9), -400, -1, 0, 1, 400, 10**9, 999999999999999]),
)
_DECIMALS = st.one_of(
    st.decimals(allow_nan=True, allow_infinity=True),
    _EXTREME_DECIMALS,
    st.sampled_from([Decimal("sNaN"), Decimal("-sNaN"), Decimal("-0"), Decimal("0E+999999")]),
)
_NUMBERS = st.one_of(
    st.integers(),
    st.integers(-(10**4000), 10**4000),
    st.sampled_from([10**4000, -(10**4000), 2**53 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, -0.0, float("nan"), float("inf"), float("-inf")]),
    _DECIMALS,
)
_TEXT = st.text(alphabet=st.characters(codec=None, categories=None), max_size=8) | st.just("\udcff")
_SCALARS = st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_TEXT, inner, max_size=4),
    ),
    max_leaves=12,
)
_TOLERANCES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 0.01, 1e308, float("inf"), float("nan"), -1.0]),
)
_MODES = st.sampled_from(["equal", "approx", "contains"])


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(_VALUES, _VALUES, _MODES, _TOLERANCES)
def test_same_answers_for_any_pair_of_values(
    expected: Any, observed: Any, compare: Any, tolerance: float
) -> None:
    assert same(expected, observed, compare, tolerance) in (True, False)
    assert isinstance(show(observed), str)


def _typed_json(value: Any) -> Any:
    """The typed JSON form of a Python value, as the sandbox side writes it."""
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, float) and value != value:
        return {"$float": "nan"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {"$float": "inf" if value > 0 else "-inf"}
    if isinstance(value, list):
        return [_typed_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _typed_json(v) for k, v in value.items() if not k.startswith("$")}
    return value


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(_VALUES, _VALUES, _MODES, _TOLERANCES)
def test_decoded_values_compare_without_raising(
    expected: Any, observed: Any, compare: Any, tolerance: float
) -> None:
    """Through the JSON the sandbox writes and :func:`decode`, as a run compares them."""
    try:
        pair = [decode(json.loads(json.dumps(_typed_json(v)))) for v in (expected, observed)]
    except (ValueFormError, ValueError):  # a form the decoder refuses is a failed case
        return
    assert same(pair[0], pair[1], compare, tolerance) in (True, False)


@pytest.mark.parametrize(
    ("expected", "observed", "tolerance", "verdict"),
    [
        (4.5, 10**4000, 0.01, False),
        (4.5, -(10**4000), 0.01, False),
        (10**4000, 10**4000 + 1, 0.5, False),
        (10**4000, 10**4000 + 1, 1.0, True),
        (4.5, 1e308, 0.01, False),
        (4.5, 4.52, 0.01, False),
        (0.0, 0.01, 0.01, True),
        (0.0, 0.010000000000000002, 0.01, False),  # the next float above 0.01
        (4.5, 4.505, 0.01, True),
        (0.0, -0.0, 0.0, True),
        (float("inf"), float("inf"), 0.01, True),
        (float("inf"), 1e308, 1e308, False),
        (4.5, float("nan"), 0.01, False),
        (Decimal("4.5"), Decimal("1E+9999999"), 0.01, False),
        (Decimal("4.5"), Decimal("1E+999999999999999"), 1e308, False),
        (Decimal("4.5"), Decimal("Infinity"), 0.01, False),
        (Decimal("Infinity"), Decimal("Infinity"), 0.01, True),
        (Decimal("4.5"), Decimal("sNaN"), 0.01, False),
        (Decimal("4.5"), Decimal("1E-999999999999999"), 4.5, True),
        (Decimal("0.5"), Decimal("0.5" + "0" * 150_000 + "1"), 0.0, False),
        (Decimal("0"), Decimal("0.5" + "0" * 150_000 + "1"), 0.5, False),
        (Decimal("0"), Decimal("0." + "4" * 150_000), 0.5, True),
        (Decimal("0"), Decimal("-0.5" + "0" * 150_000 + "1"), 0.5, False),
        (Decimal("1E+999999999999999"), Decimal("-1E+999999999999999"), 1e308, False),
        (Decimal("4.50"), Decimal("4.5"), 0.0, True),
    ],
)
def test_approx_is_decided_exactly(
    expected: Any, observed: Any, tolerance: float, verdict: bool
) -> None:
    assert same(expected, observed, "approx", tolerance) is verdict


def test_a_huge_int_is_reported_not_crashed() -> None:
    assert show(10**5000).startswith("<int too large")
    assert show(10**4000).startswith("1000")
