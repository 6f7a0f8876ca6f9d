"""submit_answer (tools/answer.py): the typed final answer, through the gateway.

The gateway validates the submitted value against the declared type (an invalid one is
an error the agent sees and may correct), a valid one ends the episode, and every call
after it is refused without running.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.spec import ANSWER_TOOL, AnswerCheck, WorldSpec
from toolproof.tools import ToolContext, ToolGateway
from toolproof.tools.answer import SubmitAnswerTool, submitted, submitted_text
from toolproof.tools.policy import requested_stop
from toolproof.trajectory import Termination, ToolCall
from toolproof.worlds import World

_ids = iter(range(10**6))


def _call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"c{next(_ids)}", name=name, arguments=arguments)


def _gateway(type_: dict[str, Any], expected: Any) -> ToolGateway:
    check = AnswerCheck.model_validate({"type": type_, "expected": expected})
    world = World(WorldSpec(records={"a": 1}))
    return ToolGateway([SubmitAnswerTool(check)], ToolContext(world=world))


def test_the_tool_schema_is_the_declared_type() -> None:
    check = AnswerCheck.model_validate({"type": {"type": "number"}, "expected": 3, "unit": "EUR"})
    schema = SubmitAnswerTool(check).schema
    assert schema.name == ANSWER_TOOL
    assert schema.parameters["required"] == ["answer"]
    assert schema.parameters["additionalProperties"] is False
    answer = schema.parameters["properties"]["answer"]
    assert answer["type"] == "number" and "EUR" in answer["description"]


@pytest.mark.parametrize(
    ("type_", "expected", "bad"),
    [
        ({"type": "number"}, 46, "46 or 42"),  # a hedge cannot be written in a number field
        ({"type": "number"}, 46, True),  # a bool is not a number
        ({"type": "number"}, 46, [46, 42]),
        ({"type": "integer"}, 46, 46.5),
        ({"type": "string", "format": "date"}, "2026-03-05", "March 5"),
        ({"type": "string", "format": "date"}, "2026-03-05", "2026-02-30"),
        ({"type": "string", "format": "time"}, "10:30", "10:30 or 11:00"),
        ({"type": "string", "format": "time"}, "10:30", "25:00"),
        ({"type": "string", "enum": ["A", "B"]}, "A", "A or B"),
        ({"type": "string", "pattern": "^O\\d{4}$"}, "O1002", "O1002, O1003"),
        ({"type": "string", "maxLength": 8}, "ZX-42", "ZX-42 or maybe ZX-43"),
        ({"type": "array", "items": {"type": "string", "enum": ["A", "B", "C"]}}, ["A"], "A"),
    ],
)
async def test_an_invalid_submission_is_an_error_the_agent_may_correct(
    type_: dict[str, Any], expected: Any, bad: Any
) -> None:
    gateway = _gateway(type_, expected)
    result = await gateway.call(_call(ANSWER_TOOL, {"answer": bad}))
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert submitted(gateway.ctx) is None and requested_stop(gateway.ctx) is None
    again = await gateway.call(_call(ANSWER_TOOL, {"answer": expected}))
    assert not again.is_error
    assert submitted(gateway.ctx) == (expected,)


async def test_extra_or_missing_arguments_are_refused() -> None:
    gateway = _gateway({"type": "number"}, 46)
    for arguments in ({}, {"answer": 46, "also": 42}, {"value": 46}):
        result = await gateway.call(_call(ANSWER_TOOL, arguments))
        assert result.is_error and result.error_kind == "invalid_arguments"
    assert submitted(gateway.ctx) is None


async def test_a_valid_submission_ends_the_episode_and_later_calls_are_refused() -> None:
    gateway = _gateway({"type": "number"}, 46)
    result = await gateway.call(_call(ANSWER_TOOL, {"answer": 46}))
    assert not result.is_error
    assert requested_stop(gateway.ctx) == (
        Termination.COMPLETED,
        "the answer was submitted with submit_answer",
    )
    assert submitted_text(gateway.ctx) == "46"
    later = await gateway.call(_call(ANSWER_TOOL, {"answer": 42}))
    assert later.is_error and "an answer was submitted" in later.content
    assert submitted(gateway.ctx) == (46,)  # the first submission stands


async def test_a_falsy_value_is_still_a_submission() -> None:
    gateway = _gateway({"type": "integer"}, 0)
    assert not (await gateway.call(_call(ANSWER_TOOL, {"answer": 0}))).is_error
    assert submitted(gateway.ctx) == (0,)
    assert submitted_text(gateway.ctx) == "0"
