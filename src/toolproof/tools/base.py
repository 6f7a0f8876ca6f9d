"""Tools as typed functions: ``@tool`` derives the JSON Schema from the signature and docstring.

Example::

    @tool(kind=ToolKind.READ)
    def get_stock(ctx: ToolContext, product_id: str) -> dict[str, Any]:
        \"\"\"Current stock of one product.

        Args:
            product_id: The product's id, e.g. "A".
        \"\"\"
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar, get_type_hints, overload

from jsonschema import Draft202012Validator
from pydantic import ConfigDict, Field, create_model

from toolproof.trajectory import ToolKind, ToolSchema

from .context import ToolContext
from .toolkits import HOME

__all__ = [
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolImpl",
    "offers_commands",
    "registry",
    "schema_from_function",
    "tool",
]


class ToolError(Exception):
    """A tool failed in a way the agent should see (bad input, missing item, limit hit)."""

    def __init__(self, message: str, *, kind: str = "tool_error") -> None:
        super().__init__(message)
        self.kind = kind


class ToolImpl(Protocol):
    """Anything the gateway can call: a registered function tool or an inline tool."""

    @property
    def schema(self) -> ToolSchema: ...

    @property
    def blocking(self) -> bool: ...

    def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any | Awaitable[Any]: ...

    def validator(self) -> Draft202012Validator: ...


class Tool:
    """A registered function tool.

    Its schema is built from the function on first use when ``schema`` is not given
    (:func:`tool` does this for the built-in toolkits: a run builds the schemas of the
    tools its tasks offer, not all of them).

    Args:
        fn: The function; its first parameter is the :class:`ToolContext`.
        schema: The tool's schema (None: built from ``fn`` on first use, with ``name``
            and ``kind``).
        toolkit: The toolkit it belongs to.
        blocking: Run in a worker thread.
        runs_commands: The tool runs commands in the episode's sandbox (see
            :func:`offers_commands`).
        name: The tool's name when ``schema`` is None (default: the function's name).
        kind: READ or WRITE when ``schema`` is None.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        schema: ToolSchema | None = None,
        toolkit: str = "",
        blocking: bool = False,
        runs_commands: bool = False,
        *,
        name: str | None = None,
        kind: ToolKind = ToolKind.READ,
    ) -> None:
        self.fn = fn
        self.toolkit = toolkit
        self.blocking = blocking
        self.runs_commands = runs_commands
        self._schema = schema
        self._name = schema.name if schema is not None else (name or fn.__name__)
        self._kind = kind
        self._validator: Draft202012Validator | None = None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._name

    @property
    def schema(self) -> ToolSchema:
        """The tool's schema, built from the function's signature on first use."""
        if self._schema is None:
            self._schema = schema_from_function(self.fn, name=self._name, kind=self._kind)
        return self._schema

    def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        """Call the function with validated arguments."""
        return self.fn(ctx, **arguments)

    def validator(self) -> Draft202012Validator:
        """A cached validator of the argument schema."""
        if self._validator is None:
            self._validator = Draft202012Validator(self.schema.parameters)
        return self._validator

    def __repr__(self) -> str:
        return f"Tool(name={self._name!r}, toolkit={self.toolkit!r})"


BUILTIN_MODULES = "toolproof.tools.toolkits."
"""Where the built-in toolkits live: their tools' schemas are built on first use (every
one is built by the tests); any other tool's when it registers, so that its author sees
a mistake (no docstring, a type without a schema) where it is made."""

_REGISTRY: dict[str, Tool] = {}
_ARGS_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def registry() -> dict[str, Tool]:
    """All registered tools by name (read-only view by convention)."""
    return _REGISTRY


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into the description and per-argument text."""
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section = "description"
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section, current = "args", None
            continue
        if re.match(r"^(Returns|Raises|Yields|Example|Examples|Note|Notes):$", stripped):
            section = "other"
            continue
        if section == "description":
            description.append(line)
        elif section == "args":
            match = _ARGS_LINE.match("  " + line if not line.startswith(" ") else line)
            if match and not line.startswith("      "):
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] += " " + stripped
    return "\n".join(description).strip(), args


def schema_from_function(fn: Callable[..., Any], *, name: str, kind: ToolKind) -> ToolSchema:
    """Build a ToolSchema from a function's signature (after ``ctx``) and docstring."""
    description, arg_docs = _parse_docstring(fn.__doc__ or "")
    if not description:
        raise TypeError(f"tool {name!r} needs a docstring: the agent reads it as the description")
    hints = get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    fields: dict[str, Any] = {}
    for param in params:
        if param.name not in hints:
            raise TypeError(f"tool {name!r}: parameter {param.name!r} needs a type annotation")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            hints[param.name],
            Field(default, description=arg_docs.get(param.name)),
        )
    model = create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    schema = _tidy(model.model_json_schema())
    return ToolSchema(name=name, description=description, parameters=schema, kind=kind)


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles; keep a plain object schema providers accept."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if "anyOf" in prop and prop.get("default", "") is None:
            non_null = [s for s in prop["anyOf"] if s.get("type") != "null"]
            if len(non_null) == 1:
                prop.pop("anyOf")
                prop.pop("default")
                prop.update(non_null[0])
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return schema


F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: F) -> F: ...


@overload
def tool(
    fn: None = None,
    *,
    kind: ToolKind = ToolKind.READ,
    name: str | None = None,
    toolkit: str | None = None,
    blocking: bool = False,
    runs_commands: bool = False,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    *,
    kind: ToolKind = ToolKind.READ,
    name: str | None = None,
    toolkit: str | None = None,
    blocking: bool = False,
    runs_commands: bool = False,
) -> F | Callable[[F], F]:
    """Register a typed function as a tool.

    Args:
        fn: The function; its first parameter is the :class:`ToolContext`.
        kind: READ or WRITE: whether it may change the world.
        name: Tool name; defaults to the function name.
        toolkit: Toolkit name; defaults to the last part of the module name.
        blocking: Run in a worker thread (for subprocesses and slow I/O).
        runs_commands: It runs commands in the episode's sandbox: a run checks that the
            sandbox can run them, and records whether they ran isolated.

    Raises:
        ValueError: a tool of that name is already registered.
    """

    def register(func: F) -> F:
        tool_name = name or func.__name__
        home = HOME.get(tool_name)  # a built-in name is taken before its toolkit loads
        if tool_name in _REGISTRY or (
            home is not None and func.__module__ != f"{BUILTIN_MODULES}{home}"
        ):
            owner = _REGISTRY[tool_name].toolkit if tool_name in _REGISTRY else home
            raise ValueError(
                f"tool {tool_name!r} is already registered by {owner}; choose another name"
            )
        kit = toolkit or func.__module__.rsplit(".", 1)[-1]
        built_in = func.__module__.startswith(BUILTIN_MODULES)
        schema = None if built_in else schema_from_function(func, name=tool_name, kind=kind)
        _REGISTRY[tool_name] = Tool(
            func,
            schema,
            kit,
            blocking,
            runs_commands,
            name=tool_name,
            kind=kind,
        )
        return func

    return register(fn) if fn is not None else register


def offers_commands(tools: Sequence[ToolImpl]) -> bool:
    """Whether any of ``tools`` runs commands (declared by its toolkit: ``runs_commands``)."""
    return any(isinstance(t, Tool) and t.runs_commands for t in tools)
