"""The agent's copies of its transcript: new objects each turn, equal to the engine's own."""

from __future__ import annotations

import math

from toolproof.engine._copies import AgentCopies
from toolproof.trajectory import Message, ToolCall, ToolSchema


def _call(**arguments: object) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="c1", name="t", arguments=arguments)])


def test_each_turn_gets_new_objects_equal_to_the_originals() -> None:
    original = [Message(role="user", content="hi é 😀"), _call(a=[1, {"b": None}], n=10**40)]
    copies = AgentCopies(original)
    first, second = copies.fresh(), copies.fresh()
    assert first == original and second == original
    assert all(a is not b for a, b in zip(first, original, strict=True))
    first[1].tool_calls[0].arguments["a"].append("edited by the agent")
    first[0].content = "rewritten"
    assert copies.fresh() == original  # the next turn sees the record, not the edit
    assert original[1].tool_calls[0].arguments == {"a": [1, {"b": None}], "n": 10**40}


def test_the_set_fields_survive_the_copy() -> None:
    message = Message(role="tool", content="15", tool_call_id="c1")
    (copy,) = AgentCopies([message]).fresh()
    assert copy.model_fields_set == {"role", "content", "tool_call_id"}
    assert copy.model_dump(exclude_unset=True) == message.model_dump(exclude_unset=True)


def test_values_json_cannot_carry_are_deep_copied_not_changed() -> None:
    hostile = [
        _call(x=float("nan"), y=float("inf"), z=-0.0),
        Message(role="assistant", content="lone \ud800 surrogate"),
    ]
    copies = AgentCopies(hostile)
    nan_call, surrogate = copies.fresh()
    args = nan_call.tool_calls[0].arguments
    assert math.isnan(args["x"]) and args["y"] == math.inf  # not turned into null
    assert math.copysign(1.0, args["z"]) == -1.0
    assert surrogate.content == "lone \ud800 surrogate"
    args["x"] = 1.0
    assert math.isnan(copies.fresh()[0].tool_calls[0].arguments["x"])


def test_tool_schemas_are_copied_too() -> None:
    schema = ToolSchema(name="t", description="d", parameters={"type": "object", "properties": {}})
    copies = AgentCopies([schema])
    mine = copies.fresh()[0]
    mine.parameters["properties"]["injected"] = {"type": "string"}
    assert copies.fresh() == [schema] and "injected" not in schema.parameters["properties"]
    assert len(copies) == 1


def test_a_nan_among_nulls_is_still_caught() -> None:
    message = Message(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(id="c", name="t", arguments={"a": None, "b": float("-inf")})],
    )
    (copy,) = AgentCopies([message]).fresh()
    assert copy.tool_calls[0].arguments["b"] == -math.inf and copy.content is None
