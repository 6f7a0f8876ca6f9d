"""The one ingress for agent bytes: what passes is plain data nothing downstream fails on.

The property: for any value an agent could send (generated: arbitrary Unicode with lone
surrogates, NaN and infinities, huge and negative numbers, deep nesting, odd keys),
``json_value``/``parse_json`` either refuse it with an ``IngressError`` naming the field,
or return data that serializes to UTF-8 JSON (what the store writes) and round-trips.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.trajectory import Usage, ingress
from toolproof.trajectory.ingress import IngressError

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None)

# Every code point, lone surrogates (category Cs) included.
ANY_TEXT = st.text(alphabet=st.characters(codec=None, categories=None), max_size=40)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | ANY_TEXT
    | st.sampled_from(["\udcff", "ok\ud800", "\udfff\ud83d", "done \udcff"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=30,
)


def _stored(value: Any) -> None:
    """What the store does with a value: UTF-8 JSON, and back."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    assert json.loads(text.encode("utf-8").decode("utf-8")) == value


@FUZZ
@given(VALUES)
def test_json_value_passes_only_storable_data(value: Any) -> None:
    try:
        copy = ingress.json_value(value, "arguments")
    except IngressError as exc:
        assert str(exc).startswith("arguments")
        return
    _stored(copy)


@FUZZ
@given(VALUES)
def test_parse_json_of_any_json_text_passes_only_storable_data(value: Any) -> None:
    # What a remote agent sends: JSON text with escapes (ensure_ascii writes \udcff).
    try:
        raw = json.dumps(value, ensure_ascii=True)
    except (ValueError, RecursionError):
        return
    try:
        data = ingress.parse_json(raw, "body")
    except IngressError as exc:
        assert str(exc).startswith("body")
        return
    _stored(data)


@FUZZ
@given(st.binary(max_size=200))
def test_parse_json_of_any_bytes_never_raises_anything_else(raw: bytes) -> None:
    with contextlib.suppress(IngressError):
        _stored(ingress.parse_json(raw, "body"))


@FUZZ
@given(ANY_TEXT)
def test_text_passes_only_valid_unicode(value: str) -> None:
    try:
        plain = ingress.text(value, "turn.content")
    except IngressError as exc:
        assert "lone UTF-16 surrogate" in str(exc)
        assert ingress.lone_surrogate(value) is not None
        return
    assert plain.encode("utf-8").decode("utf-8") == value


@FUZZ
@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=3), st.none()))
def test_counts_and_costs_are_finite_and_non_negative(value: Any) -> None:
    try:
        number = ingress.count(value, "usage.input_tokens")
        assert 0 <= number <= ingress.MAX_COUNT
    except IngressError:
        pass
    try:
        cost = ingress.cost(value, "usage.cost_usd")
        assert cost is None or (math.isfinite(cost) and 0 <= cost <= ingress.MAX_COST_USD)
    except IngressError:
        pass


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ('{"content": "done \\udcff"}', "body.content holds a lone UTF-16 surrogate"),
        ('{"\\ud800": 1}', "body (a key) holds a lone UTF-16 surrogate"),
        ('{"n": NaN}', "body holds NaN"),
        ('{"n": -Infinity}', "body holds -Infinity"),
        ('{"n": [1, 1e400]}', "body.n[1] is inf: not a finite number"),  # overflows to inf
        ("[" * 100_000 + "]" * 100_000, "body nests deeper than 32 levels"),
        (b"\xed\xb3\xbf", "body is not UTF-8"),  # a surrogate encoded as UTF-8 bytes
        ("{", "body is not valid JSON"),
    ],
)
def test_hostile_json_text_is_refused_naming_the_field(raw: str | bytes, said: str) -> None:
    with pytest.raises(IngressError, match="^" + re.escape(said)):
        ingress.parse_json(raw, "body")


def test_a_cycle_and_a_huge_integer_are_not_json() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(IngressError, match="Circular reference"):
        ingress.json_value(cycle, "arguments")
    with pytest.raises(IngressError, match="not JSON data"):
        ingress.json_value({"n": 10**5000}, "arguments")


def test_over_the_size_limit_is_refused() -> None:
    with pytest.raises(IngressError, match="the limit is 10"):
        ingress.json_value({"a": "x" * 20}, "arguments", limit=10)
    with pytest.raises(IngressError, match="the limit is 5"):
        ingress.text("abcdef", "turn.content", limit=5)


def test_a_str_subclass_comes_back_plain() -> None:
    class Sneaky(str):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert type(ingress.text(Sneaky("hi"), "turn.content")) is str


@pytest.mark.parametrize("bad", [-1, 1.5, float("nan"), float("inf"), True, "3", 10**13])
def test_bad_counts_are_refused(bad: object) -> None:
    with pytest.raises(IngressError, match=r"usage\.input_tokens"):
        ingress.count(bad, "usage.input_tokens")


@pytest.mark.parametrize("bad", [-24_690.0, float("nan"), float("-inf"), 10**400, "1", False])
def test_bad_costs_are_refused(bad: object) -> None:
    with pytest.raises(IngressError, match=r"usage\.cost_usd"):
        ingress.cost(bad, "usage.cost_usd")


def test_usage_itself_refuses_negative_and_non_finite_values() -> None:
    with pytest.raises(ValueError):
        Usage(input_tokens=-1)
    with pytest.raises(ValueError):
        Usage(cost_usd=-24_690.0)
    with pytest.raises(ValueError):
        Usage(cost_usd=float("nan"))
    assert Usage(input_tokens=3, cost_usd=0.5) + Usage(output_tokens=2) == Usage(
        input_tokens=3, output_tokens=2, cost_usd=0.5
    )
