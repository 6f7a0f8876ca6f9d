"""Tools: typed functions, toolkits, and the gateway every call goes through.

Map::

    @tool functions (toolkits/*.py) + InlineTool (inline.py) --resolve_tools(task)--> ToolImpl[]
    ToolGateway(tools, ToolContext(world), faults, policies).call(ToolCall) -> ToolResult
"""

from .base import Tool, ToolContext, ToolError, ToolImpl, registry, schema_from_function, tool
from .gateway import CallPolicy, ToolCrash, ToolGateway
from .inline import InlineToolImpl, ToolHandler, tool_handler, tool_handlers
from .resolve import resolve_tools, toolkits
from .toolkits import load_builtin

__all__ = [
    "CallPolicy",
    "InlineToolImpl",
    "Tool",
    "ToolContext",
    "ToolCrash",
    "ToolError",
    "ToolGateway",
    "ToolHandler",
    "ToolImpl",
    "load_builtin",
    "registry",
    "resolve_tools",
    "schema_from_function",
    "tool",
    "tool_handler",
    "tool_handlers",
    "toolkits",
]
