"""Inline tools: declared in the task, deterministic, matched by arguments."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.spec import InlineTool, WorldSpec
from toolproof.tools import InlineToolImpl, ToolContext, ToolGateway
from toolproof.trajectory import ToolCall, ToolKind
from toolproof.worlds import World

BOOKING = InlineTool.model_validate(
    {
        "name": "book_room",
        "description": "Book a room.",
        "kind": "write",
        "parameters": {
            "type": "object",
            "properties": {"room": {"type": "string"}, "nights": {"type": "integer"}},
            "required": ["room"],
        },
        "responses": [
            {"when": {"room": "101", "nights": 9}, "error": "too many nights"},
            {
                "when": {"room": "101"},
                "result": {"booked": "101"},
                "effects": {"rooms.101.free": False, "log[0]": "booked 101"},
            },
            {"when": {"room": "Suite "}, "result": "the suite is yours"},
        ],
        "default_error": "no such room",
    }
)


@pytest.fixture
def world() -> World:
    return World(WorldSpec(records={"rooms": {"101": {"free": True}}, "log": ["-"]}))


async def _call(world: World, arguments: dict[str, Any]) -> tuple[bool, str]:
    gateway = ToolGateway([InlineToolImpl(BOOKING)], ToolContext(world=world))
    result = await gateway.call(ToolCall(id="c", name="book_room", arguments=arguments))
    return result.is_error, result.content


async def test_first_matching_response_applies_its_result_and_effects(world: World) -> None:
    digest = world.records_digest()
    assert await _call(world, {"room": "101", "nights": 2}) == (False, '{"booked": "101"}')
    assert world.records == {"rooms": {"101": {"free": False}}, "log": ["booked 101"]}
    assert world.records_digest() != digest


async def test_declared_errors_and_the_default_error(world: World) -> None:
    assert await _call(world, {"room": "101", "nights": 9}) == (True, "error: too many nights")
    assert await _call(world, {"room": "999"}) == (True, "error: no such room")
    assert world.records["rooms"]["101"]["free"] is True


async def test_string_arguments_match_trimmed_and_case_insensitively(world: World) -> None:
    assert await _call(world, {"room": "  suite"}) == (False, "the suite is yours")


async def test_arguments_are_validated_against_the_declared_schema(world: World) -> None:
    is_error, content = await _call(world, {"nights": 2})
    assert is_error and "'room' is a required property" in content


def test_schema_and_kind_come_from_the_declaration() -> None:
    impl = InlineToolImpl(BOOKING)
    assert impl.schema.name == "book_room"
    assert impl.schema.kind is ToolKind.WRITE
    assert impl.schema.parameters["required"] == ["room"]
    assert not impl.blocking
    minimal = InlineToolImpl(InlineTool(name="ping", description="Ping."))
    assert minimal.schema.parameters == {"type": "object", "properties": {}}
    assert minimal.schema.kind is ToolKind.READ
