"""Tool schemas in each provider's shape, and clear errors for what a provider cannot take."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolproof.agents.adapters._schemas import anthropic_tools, neutral_tools, openai_tools
from toolproof.spec import SpecError
from toolproof.trajectory import ToolKind, ToolSchema

ADD = ToolSchema(
    name="add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
NOW = ToolSchema(name="now", description="The time.", parameters={"type": "object"})


def test_openai_function_tools() -> None:
    assert openai_tools([ADD, NOW]) == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": ADD.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "now",
                "description": "The time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


def test_anthropic_tools() -> None:
    assert anthropic_tools([ADD]) == [
        {"name": "add", "description": "Add two numbers.", "input_schema": ADD.parameters}
    ]


def test_neutral_tools_keep_the_kind() -> None:
    write = ADD.model_copy(update={"kind": ToolKind.WRITE})
    assert neutral_tools([write])[0]["kind"] == "write"


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (ADD.model_copy(update={"name": "files.read"}), "'files.read' (10 chars) is not one"),
        (ADD.model_copy(update={"name": "x" * 65}), "1 to 64 letters"),
        (ADD.model_copy(update={"name": ""}), "1 to 64 letters"),
        (ADD.model_copy(update={"parameters": {"type": "string"}}), "type 'string'"),
        (ADD.model_copy(update={"parameters": {}}), "type None"),
    ],
)
@pytest.mark.parametrize("translate", [openai_tools, anthropic_tools])
def test_inexpressible_tools_are_spec_errors(
    tool: ToolSchema, message: str, translate: Callable[[list[ToolSchema]], object]
) -> None:
    with pytest.raises(SpecError, match=r"tools\.") as info:
        translate([tool])
    assert message in str(info.value)


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(SpecError, match="two tools have this name"):
        openai_tools([ADD, ADD])
