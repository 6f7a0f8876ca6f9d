"""Tool schemas in each provider's shape: the one place they are translated.

A toolproof :class:`~toolproof.trajectory.ToolSchema` is neutral (name,
description, JSON Schema of the arguments). OpenAI wants a function tool,
Anthropic a tool with an ``input_schema``. Both accept only a name of letters,
digits, ``_`` and ``-`` of at most 64 characters, and an arguments schema that
is a JSON object; a tool they cannot express is a :class:`SpecError` naming the
tool and the fix, raised before any request is sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import ToolSchema

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Tool names both providers accept."""


def _problems(schema: ToolSchema, provider: str) -> list[Problem]:
    where = f"tools.{schema.name}"
    problems = []
    if not NAME_PATTERN.match(schema.name):
        problems.append(
            Problem(
                None,
                None,
                where,
                f"{provider} accepts tool names of 1 to 64 letters, digits, '_' or '-'; "
                f"{schema.name!r} ({len(schema.name)} chars) is not one: rename the tool",
            )
        )
    params = schema.parameters
    kind = params.get("type")
    if kind != "object":
        problems.append(
            Problem(
                None,
                None,
                f"{where}.parameters",
                f"{provider} needs the arguments schema to be a JSON object "
                f"(type: object), got type {kind!r}: wrap the value in an object property",
            )
        )
    elif not isinstance(params.get("properties", {}), dict):
        problems.append(
            Problem(
                None,
                None,
                f"{where}.parameters.properties",
                "must be a mapping of names to schemas",
            )
        )
    return problems


def check_tools(schemas: Sequence[ToolSchema], provider: str) -> None:
    """Check that a provider can express every tool.

    Args:
        schemas: The episode's tools.
        provider: The provider's name, for the message.

    Raises:
        SpecError: one problem per tool the provider cannot take.
    """
    problems = [p for schema in schemas for p in _problems(schema, provider)]
    seen: set[str] = set()
    for schema in schemas:
        if schema.name in seen:
            problems.append(Problem(None, None, f"tools.{schema.name}", "two tools have this name"))
        seen.add(schema.name)
    if problems:
        raise SpecError(problems)


def _parameters(schema: ToolSchema) -> dict[str, Any]:
    params = dict(schema.parameters)
    params.setdefault("properties", {})
    return params


def openai_tools(schemas: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """OpenAI Chat Completions function tools.

    Raises:
        SpecError: a tool OpenAI cannot express.
    """
    check_tools(schemas, "openai")
    return [
        {
            "type": "function",
            "function": {
                "name": s.name,
                "description": s.description,
                "parameters": _parameters(s),
            },
        }
        for s in schemas
    ]


def anthropic_tools(schemas: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """Anthropic Messages tools.

    Raises:
        SpecError: a tool Anthropic cannot express.
    """
    check_tools(schemas, "anthropic")
    return [
        {"name": s.name, "description": s.description, "input_schema": _parameters(s)}
        for s in schemas
    ]


def neutral_tools(schemas: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """Tools as the HTTP agent protocol sends them: name, description, parameters, kind."""
    return [
        {
            "name": s.name,
            "description": s.description,
            "parameters": s.parameters,
            "kind": s.kind.value,
        }
        for s in schemas
    ]
