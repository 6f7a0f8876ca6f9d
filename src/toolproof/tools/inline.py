"""Tools defined in a task file: a JSON Schema and declared deterministic behaviour."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from toolproof.spec import InlineTool
from toolproof.trajectory import ToolKind, ToolSchema
from toolproof.worlds import records

from .base import ToolContext, ToolError

ToolHandler = Callable[[ToolContext, str, dict[str, Any]], Any]
"""Performs an inline tool's call: ``(ctx, tool name, arguments) -> result``."""
_HANDLERS: dict[str, ToolHandler] = {}


def tool_handler(name: str) -> Callable[[ToolHandler], ToolHandler]:
    """Register the code an inline tool with ``handler: NAME`` runs (e.g. a provider's world).

    Raises:
        ValueError: the name is already registered.
    """

    def register(fn: ToolHandler) -> ToolHandler:
        if name in _HANDLERS:
            raise ValueError(f"tool handler {name!r} is already registered")
        _HANDLERS[name] = fn
        return fn

    return register


def tool_handlers() -> dict[str, ToolHandler]:
    """The registered tool handlers by name."""
    return dict(_HANDLERS)


def _matches(when: dict[str, Any], arguments: dict[str, Any]) -> bool:
    for key, expected in when.items():
        if key not in arguments:
            return False
        actual = arguments[key]
        if isinstance(expected, str) and isinstance(actual, str):
            if expected.strip().lower() != actual.strip().lower():
                return False
        elif expected != actual:
            return False
    return True


@dataclass
class InlineToolImpl:
    """Plays an :class:`InlineTool`: the first response whose ``when`` matches applies."""

    spec: InlineTool
    _validator: Draft202012Validator | None = field(default=None, repr=False)

    @property
    def schema(self) -> ToolSchema:
        """The tool as the agent sees it."""
        return ToolSchema(
            name=self.spec.name,
            description=self.spec.description,
            parameters={"type": "object", "properties": {}, **self.spec.parameters},
            kind=ToolKind(self.spec.kind),
        )

    @property
    def blocking(self) -> bool:
        """Declared responses are instant; a handler's code runs on a tool thread."""
        return self.spec.handler is not None

    def validator(self) -> Draft202012Validator:
        """A cached validator of the argument schema."""
        if self._validator is None:
            self._validator = Draft202012Validator(self.schema.parameters)
        return self._validator

    def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        """Return the declared result, apply declared effects, or raise the declared error.

        With a ``handler``, its registered code performs the call.

        Raises:
            ToolError: the declared error, no matching response, or an unknown handler.
        """
        if self.spec.handler is not None:
            handler = _HANDLERS.get(self.spec.handler)
            if handler is None:
                known = ", ".join(sorted(_HANDLERS)) or "none"
                raise ToolError(f"no tool handler {self.spec.handler!r} (registered: {known})")
            return handler(ctx, self.spec.name, arguments)
        for response in self.spec.responses:
            if _matches(response.when, arguments):
                if response.error is not None:
                    raise ToolError(response.error)
                for path, value in response.effects.items():
                    records.set_path(ctx.world.records, path, value)
                if response.effects:
                    ctx.world.touch()
                return response.result
        raise ToolError(self.spec.default_error)
