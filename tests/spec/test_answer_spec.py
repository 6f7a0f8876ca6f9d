"""The task format of typed answers: the ``answer`` check and ``solution.submit``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from toolproof.spec import AnswerCheck, Task
from toolproof.spec.answer import same_answer, submit_schema


def _task(answer: dict[str, Any], submit: Any = 46, **extra: Any) -> dict[str, Any]:
    return {
        "id": "t",
        "description": "How many?",
        "type": "single_tool",
        "tools": ["get_stock"],
        "success": [{"kind": "answer", **answer}],
        "solution": {"calls": [], "submit": submit},
        **extra,
    }


NUMBER = {"type": {"type": "number"}, "expected": 46}


def test_a_typed_answer_task_loads_and_names_its_answer() -> None:
    task = Task.model_validate(_task(NUMBER))
    assert task.answer is not None and task.answer.expected == 46
    assert task.answer.comparison == "exact"


def test_a_rendered_number_template_becomes_a_number() -> None:
    task = Task.model_validate(_task({"type": {"type": "number"}, "expected": "12.5"}, "12.5"))
    assert task.answer is not None and task.answer.expected == 12.5
    assert task.solution.submit == 12.5


@pytest.mark.parametrize(
    ("answer", "submit", "message"),
    [
        (NUMBER, None, "solution.submit is missing"),
        (NUMBER, 42, "is not the answer check's expected 46"),
        (NUMBER, "46 or 42", "does not fit the answer type"),
        ({"type": {"type": "object"}, "expected": {}}, {}, "needs properties"),
        ({"type": {"type": "boolean"}, "expected": True}, True, "is not supported"),
        (
            {"type": {"type": "string"}, "expected": "x"},
            "x",
            "needs enum, pattern, format or maxLength",
        ),
        (
            {"type": {"type": "string", "format": "email"}, "expected": "a@b"},
            "a@b",
            "format 'email'",
        ),
        ({"type": {"type": "string", "enum": ["A"]}, "expected": "A"}, "A", "at least two options"),
        (
            {"type": {"type": "string", "format": "date"}, "expected": "2026-02-30"},
            "x",
            "not a date",
        ),
        ({"type": {"type": "number"}, "expected": "many"}, 1, "is not a number"),
        ({**NUMBER, "compare": "set"}, 46, "needs a list answer"),
        (
            {"type": {"type": "string", "maxLength": 9}, "expected": "x", "compare": "tolerance"},
            "x",
            "needs a number",
        ),
        ({"type": {"type": "number", "minimum": "x"}, "expected": 1}, 1, "not a valid JSON Schema"),
    ],
)
def test_bad_answers_are_refused_with_the_reason(
    answer: dict[str, Any], submit: Any, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        Task.model_validate(_task(answer, submit))


def test_one_answer_per_task_and_submit_only_with_one() -> None:
    two = _task(NUMBER)
    two["success"].append({"kind": "answer", **NUMBER})
    with pytest.raises(ValidationError, match="2 answer checks"):
        Task.model_validate(two)
    plain = _task(NUMBER)
    plain["success"] = [{"kind": "output", "contains": ["46"]}]
    with pytest.raises(ValidationError, match="has no answer check"):
        Task.model_validate(plain)


def test_an_inline_tool_may_not_take_the_answer_tools_name() -> None:
    data = _task(NUMBER)
    data["tools"] = [{"name": "submit_answer", "description": "mine"}]
    with pytest.raises(ValidationError, match="reserved for the typed answer"):
        Task.model_validate(data)


def _check(**data: Any) -> AnswerCheck:
    return AnswerCheck.model_validate(data)


def test_comparisons_as_declared() -> None:
    money = _check(type={"type": "number"}, expected=955.38, tolerance=0.005)
    assert money.comparison == "tolerance"
    assert same_answer(money, 955.384) and not same_answer(money, 955.39)
    assert not same_answer(money, True)
    ids = _check(
        type={"type": "array", "items": {"type": "string", "enum": ["A", "B", "C"]}},
        expected=["A", "B"],
    )
    assert ids.comparison == "set"
    assert same_answer(ids, ["B", "A"]) and not same_answer(ids, ["A", "B", "B"])
    assert not same_answer(ids, ["A"])
    ordered = _check(type=ids.type, expected=["A", "B"], compare="order")
    assert same_answer(ordered, ["A", "B"]) and not same_answer(ordered, ["B", "A"])
    word = _check(type={"type": "string", "maxLength": 20}, expected="Gym Plus")
    assert same_answer(word, " gym  plus ")
    strict = _check(
        type={"type": "string", "maxLength": 20}, expected="Gym Plus", case_sensitive=True
    )
    assert not same_answer(strict, "gym plus")


def test_the_submit_schema_wraps_the_declared_type() -> None:
    schema = submit_schema(_check(type={"type": "string", "format": "time"}, expected="10:30"))
    assert schema["properties"]["answer"]["format"] == "time"
    assert "HH:MM" in schema["properties"]["answer"]["description"]


def test_a_list_of_numbers_compares_each_within_the_tolerance() -> None:
    pair = _check(
        type={"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        expected=[3, 1234.56],
        compare="order",
        tolerance=0.011,
    )
    assert same_answer(pair, [3, 1234.565]) and not same_answer(pair, [1234.56, 3])
    assert not same_answer(pair, [3, 1234.6]) and not same_answer(pair, [3])
    unordered = _check(type=pair.type, expected=[3, 1234.56], tolerance=0.011)
    assert unordered.comparison == "set" and same_answer(unordered, [1234.56, 3.0])


def test_the_standard_system_prompt_says_to_finish_with_submit_answer() -> None:
    from toolproof.spec import DEFAULT_SYSTEM_PROMPT

    assert "submit_answer" in DEFAULT_SYSTEM_PROMPT
    assert "otherwise reply with your final answer" in DEFAULT_SYSTEM_PROMPT


def test_a_typed_answer_cannot_end_a_conversation_early() -> None:
    data = _task(NUMBER, user_turns=[{"content": "And now?"}])
    with pytest.raises(ValidationError, match="cannot have one"):
        Task.model_validate(data)


PAIR = {
    "type": "object",
    "properties": {
        "stock": {"type": "string", "enum": ["ACME", "GLOBX", "INITC"]},
        "price": {"type": "number"},
    },
    "required": ["stock", "price"],
    "additionalProperties": False,
}


def test_an_object_answer_compares_each_property() -> None:
    check = AnswerCheck.model_validate(
        {"type": PAIR, "expected": {"stock": "GLOBX", "price": "12.5"}, "tolerance": 0.01}
    )
    assert check.answer_kind == "object"
    assert check.expected == {"stock": "GLOBX", "price": 12.5}
    assert same_answer(check, {"stock": "globx", "price": 12.505})
    assert not same_answer(check, {"stock": "ACME", "price": 12.5})
    assert not same_answer(check, {"stock": "GLOBX", "price": 12.6})
    assert not same_answer(check, {"stock": "GLOBX"})
    parameters = submit_schema(check)["properties"]["answer"]
    assert parameters["properties"] == PAIR["properties"]
    assert parameters["additionalProperties"] is False


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"properties": {}}, "needs properties"),
        ({"required": ["stock"]}, "requires every property"),
        ({"additionalProperties": True}, "additionalProperties: false"),
        ({"properties": {"stock": {"type": "string", "maxLength": 9}}}, "not free text"),
        ({"properties": {"stock": {"type": "object"}}}, "is not supported"),
        ({"properties": {"stock": {"type": "array"}}}, "a list needs items"),
    ],
)
def test_a_bad_object_answer_is_refused_with_the_fix(change: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        AnswerCheck.model_validate(
            {"type": {**PAIR, **change}, "expected": {"stock": "GLOBX", "price": 1}}
        )


def test_an_object_answer_must_expect_every_property() -> None:
    with pytest.raises(ValidationError, match="does not fit"):
        AnswerCheck.model_validate({"type": PAIR, "expected": {"stock": "GLOBX"}})


def test_a_list_property_of_an_object_compares_as_a_set() -> None:
    kinds = {
        "type": "object",
        "properties": {
            "repriced": {"type": "integer"},
            "skipped": {"type": "array", "items": {"type": "string", "pattern": "^SKU-\\d{4}$"}},
        },
        "required": ["repriced", "skipped"],
        "additionalProperties": False,
    }
    check = AnswerCheck.model_validate(
        {"type": kinds, "expected": {"repriced": 9, "skipped": ["SKU-4106", "SKU-4001"]}}
    )
    assert same_answer(check, {"repriced": 9, "skipped": ["SKU-4001", "SKU-4106"]})
    assert not same_answer(check, {"repriced": 9, "skipped": ["SKU-4001"]})
    assert not same_answer(check, {"repriced": 8, "skipped": ["SKU-4001", "SKU-4106"]})


def test_a_declared_type_is_checked_once_and_judged_the_same_every_time() -> None:
    """The schema check and the validator are cached by the type's JSON: a bad type is
    refused on every load, not only the first, and values are judged as before."""
    from toolproof.spec.answer import answer_problems

    bad = {"type": {"type": "number", "minimum": "x"}, "expected": 1}
    for _ in range(3):
        with pytest.raises(ValidationError, match="not a valid JSON Schema"):
            Task.model_validate(_task(bad, 1))
    schema = {"type": "integer", "minimum": 0}
    assert answer_problems(schema, 3) == []
    assert answer_problems(dict(schema), -1)  # an equal type from another task: same verdict
    assert answer_problems(schema, "3")


def test_a_type_that_is_not_plain_json_is_still_checked() -> None:
    """A YAML date in an enum is not JSON: checked uncached, not read as its string."""
    import datetime

    schema = {"enum": [datetime.date(2024, 1, 1)]}
    assert answer_problems_of(schema, "2024-01-01")


def answer_problems_of(schema: dict[str, Any], value: Any) -> list[str]:
    from toolproof.spec.answer import answer_problems

    return answer_problems(schema, value)
