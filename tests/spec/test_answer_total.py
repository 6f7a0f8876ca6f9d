"""``answer.same_answer`` is total on every number an agent can submit (an int of thousands
of digits, ``1e308``, ``-0.0``): it answers True or False, never raises, and compares
numbers within the tolerance exactly."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.spec.answer import AnswerCheck, same_answer

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "200"))

_NUMBERS = st.one_of(
    st.integers(),
    st.integers(-(10**4000), 10**4000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([10**4000, -(10**4000), 1e308, -1e308, -0.0, 5e-324, 2**53 + 1]),
)
_CHECKS = [
    AnswerCheck(type={"type": "number"}, expected=4.5, tolerance=0.01),
    AnswerCheck(type={"type": "number"}, expected=4.5),
    AnswerCheck(type={"type": "integer"}, expected=7),
    AnswerCheck(type={"type": "array", "items": {"type": "number"}}, expected=[1, 2.5]),
    AnswerCheck(
        type={"type": "array", "items": {"type": "number"}},
        expected=[1, 2.5],
        compare="order",
        tolerance=0.5,
    ),
    AnswerCheck(
        type={
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        expected={"x": 1.5, "y": 2},
        tolerance=0.1,
    ),
]
_SUBMISSIONS = st.recursive(
    _NUMBERS | st.text(max_size=4) | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xy"), inner),
    max_leaves=6,
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.sampled_from(range(len(_CHECKS))), _SUBMISSIONS)
def test_same_answer_never_raises(which: int, value: Any) -> None:
    assert same_answer(_CHECKS[which], value) in (True, False)


@pytest.mark.parametrize(
    ("value", "verdict"),
    [(10**4000, False), (-(10**4000), False), (1e308, False), (4.505, True), (4.52, False)],
)
def test_a_number_answer_is_compared_exactly(value: Any, verdict: bool) -> None:
    assert same_answer(_CHECKS[0], value) is verdict


def test_an_integer_answer_is_exact_beyond_float_precision() -> None:
    check = AnswerCheck(type={"type": "integer"}, expected=2**53)
    assert same_answer(check, 2**53) is True
    assert same_answer(check, 2**53 + 1) is False
    assert same_answer(check, 10**4000) is False
