"""The agent's copies of its transcript: its own objects, equal to the engine's, made once."""

from __future__ import annotations

import math

from toolproof.engine._copies import AgentCopies
from toolproof.trajectory import Message, ToolCall, ToolSchema


def _call(**arguments: object) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="c1", name="t", arguments=arguments)])


def test_the_agent_gets_its_own_objects_equal_to_the_originals() -> None:
    original = [Message(role="user", content="hi é 😀"), _call(a=[1, {"b": None}], n=10**40)]
    copies = AgentCopies(original)
    first, second = copies.fresh(), copies.fresh()
    assert first == original and second == original
    assert all(a is not b for a, b in zip(first, original, strict=True))
    assert first is not second  # a new list each turn: the agent may reorder its own
    first[1].tool_calls[0].arguments["a"].append("edited by the agent")
    first[0].content = "rewritten"
    first.clear()
    # the record is never reached; the agent's edits to its copies are its own notes
    assert original[1].tool_calls[0].arguments == {"a": [1, {"b": None}], "n": 10**40}
    assert original[0].content == "hi é 😀"
    assert len(copies.fresh()) == 2


def test_a_turn_copies_only_what_is_new() -> None:
    """The copies of earlier items are reused: a turn's cost is its new items only."""
    copies = AgentCopies([Message(role="user", content="one")])
    (old,) = copies.fresh()
    copies.add(Message(role="assistant", content="two"))
    again, new = copies.fresh()
    assert again is old and new.content == "two"


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
    assert math.isnan(hostile[0].tool_calls[0].arguments["x"])  # the record keeps its NaN


def test_tool_schemas_are_copied_too() -> None:
    schema = ToolSchema(name="t", description="d", parameters={"type": "object", "properties": {}})
    copies = AgentCopies([schema])
    mine = copies.fresh()[0]
    mine.parameters["properties"]["injected"] = {"type": "string"}
    assert "injected" not in schema.parameters["properties"]
    assert len(copies) == 1


def test_a_nan_among_nulls_is_still_caught() -> None:
    message = Message(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(id="c", name="t", arguments={"a": None, "b": float("-inf")})],
    )
    (copy,) = AgentCopies([message]).fresh()
    assert copy.tool_calls[0].arguments["b"] == -math.inf and copy.content is None
