"""``@tool``: the JSON Schema comes from the signature and the docstring; names are unique."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator

from toolproof.tools import ToolContext, registry, schema_from_function, tool
from toolproof.trajectory import ToolKind


def search(
    ctx: ToolContext,
    query: str,
    limit: int = 10,
    mode: Literal["fast", "exact"] = "fast",
    tags: list[str] | None = None,
) -> list[str]:
    """Search the catalogue by name.

    Longer explanation on a second paragraph.

    Args:
        query: Words to look for, e.g. "bolt".
        limit: Most results to return; results past it
            are dropped.
        mode: How to match.
        tags: Only items with all these tags.

    Returns:
        Matching names.
    """
    return []


def test_schema_from_signature_and_docstring() -> None:
    schema = schema_from_function(search, name="search", kind=ToolKind.READ)
    assert schema.name == "search"
    assert schema.kind is ToolKind.READ
    assert schema.description == (
        "Search the catalogue by name.\n\nLonger explanation on a second paragraph."
    )
    params = schema.parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert list(props) == ["query", "limit", "mode", "tags"]
    assert props["query"] == {"type": "string", "description": 'Words to look for, e.g. "bolt".'}
    assert props["limit"]["type"] == "integer" and props["limit"]["default"] == 10
    assert props["limit"]["description"] == "Most results to return; results past it are dropped."
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert props["tags"]["type"] == "array" and "default" not in props["tags"]
    assert all("title" not in p for p in props.values())
    Draft202012Validator.check_schema(params)


def test_schema_validates_arguments_as_the_signature_would() -> None:
    validator = Draft202012Validator(
        schema_from_function(search, name="search", kind=ToolKind.READ).parameters
    )
    assert validator.is_valid({"query": "bolt"})
    assert validator.is_valid({"query": "bolt", "limit": 3, "mode": "exact", "tags": ["a"]})
    assert not validator.is_valid({})
    assert not validator.is_valid({"query": "bolt", "limit": "three"})
    assert not validator.is_valid({"query": "bolt", "mode": "slow"})
    assert not validator.is_valid({"query": "bolt", "colour": "red"})


def test_a_tool_needs_a_docstring_and_annotations() -> None:
    def undocumented(ctx: ToolContext, a: int) -> int:
        return a

    def untyped(ctx: ToolContext, a) -> int:  # type: ignore[no-untyped-def]
        """Has no annotation."""
        return 1

    with pytest.raises(TypeError, match="needs a docstring"):
        schema_from_function(undocumented, name="u", kind=ToolKind.READ)
    with pytest.raises(TypeError, match="'a' needs a type annotation"):
        schema_from_function(untyped, name="u", kind=ToolKind.READ)


@pytest.mark.usefixtures("restore_registries")
def test_register_by_name_and_refuse_duplicates() -> None:
    @tool(kind=ToolKind.WRITE, name="tp_test_touch", toolkit="testkit")
    def touch(ctx: ToolContext, key: str) -> dict[str, Any]:
        """Set a key."""
        return {}

    registered = registry()["tp_test_touch"]
    assert registered.fn is touch
    assert registered.toolkit == "testkit"
    assert registered.schema.kind is ToolKind.WRITE

    with pytest.raises(ValueError, match="'tp_test_touch' is already registered by testkit"):

        @tool(name="tp_test_touch")
        def other(ctx: ToolContext) -> None:
            """Another tool of the same name."""

    assert registry()["tp_test_touch"].fn is touch


@pytest.mark.usefixtures("restore_registries")
def test_bare_decorator_uses_the_function_and_module_names() -> None:
    @tool
    def tp_test_bare(ctx: ToolContext) -> str:
        """A tool with no arguments."""
        return "ok"

    registered = registry()["tp_test_bare"]
    assert registered.toolkit == "test_base"  # the last part of the module name
    assert registered.schema.parameters == {
        "additionalProperties": False,
        "properties": {},
        "type": "object",
    }
