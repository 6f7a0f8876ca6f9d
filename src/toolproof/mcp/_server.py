"""An MCP server (the official SDK's low-level API) over the tools of one episode.

Every ``tools/call`` goes to :meth:`ToolHost.call_tool`, which for an episode is
:meth:`toolproof.agents.ToolSession.call_tool`: the gateway validates the
arguments, applies faults and policies, and the call is recorded as a step. The
arguments pass the one ingress first (:func:`toolproof.trajectory.ingress.json_object`):
what is not plain, bounded JSON data (nested too deep, a lone surrogate) is the agent's
error, answered as an ``isError`` result, and never reaches the host.
The server adds nothing the task did not declare, except, when asked, a
``submit_answer`` tool through which an outside client hands in its final
answer (an MCP client has no other way to say "I am done, and this is my answer").

Once an answer is handed in (or a call crashed the harness) the episode is over:
later calls are refused with an error result and never reach the gateway, so
they are neither executed nor scored. A call of a tool the server does not offer
is recorded by the gateway (it counts as a bad call) and answered with the MCP
spec's JSON-RPC error (``-32602``), not an ``isError`` result.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from toolproof._version import __version__
from toolproof.trajectory import ToolKind, ToolResult, ToolSchema, ingress

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import (
        CallToolRequestParams,
        CallToolResult,
        GetPromptRequestParams,
        GetPromptResult,
        ListPromptsResult,
        ListToolsResult,
        PaginatedRequestParams,
    )

ANSWER_TOOL = "submit_answer"
"""Name of the optional tool an outside client calls with its final answer."""

TASK_PROMPT = "task"
"""Name of the MCP prompt that holds the task (system prompt and task text)."""

_ANSWER_SCHEMA: dict[str, Any] = {  # for tasks without a typed answer
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "Your final answer to the task."}},
    "required": ["answer"],
}


class ToolHost(Protocol):
    """What the server serves: the shape of :class:`toolproof.agents.ToolSession`."""

    @property
    def system_prompt(self) -> str: ...

    @property
    def prompt(self) -> str: ...

    @property
    def tools(self) -> list[ToolSchema]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call through the gateway (and record it)."""
        ...


@dataclass
class ServeState:
    """What happened while serving, for whoever waits on the server.

    Attributes:
        answer: The answer handed in with ``submit_answer``, if any.
        crash: An exception a tool call raised (a harness failure such as
            ``ToolCrash``); the client got an error, the episode must end.
        done: Set when an answer was handed in or a tool call crashed.
    """

    answer: str | None = None
    crash: BaseException | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


def task_text(host: ToolHost) -> str:
    """The system prompt and the task, as one text (MCP prompts have no system role)."""
    system = host.system_prompt.strip()
    return f"{system}\n\n{host.prompt}" if system else host.prompt


def build_server(
    host: ToolHost,
    state: ServeState,
    *,
    answer_tool: bool = False,
    instructions: str | None = None,
) -> Server[Any]:
    """An MCP server offering the host's tools, and the task as the prompt ``task``.

    Args:
        host: The tools to serve (an episode's ``ToolSession``).
        state: Filled in while serving (answer, crash).
        answer_tool: Also offer ``submit_answer(answer)``; calling it ends the episode.
        instructions: The server's instructions to clients (e.g. the task).

    A task with a typed answer already offers ``submit_answer`` (its declared type):
    it is served as the task's tool, ``answer_tool`` or not, and a valid call ends the
    episode like the untyped one.
    """
    from mcp.server.lowlevel import Server
    from mcp.types import (
        INVALID_PARAMS,
        GetPromptResult,
        ListPromptsResult,
        ListToolsResult,
        Prompt,
        PromptMessage,
        TextContent,
        Tool,
        ToolAnnotations,
    )

    names = {schema.name for schema in host.tools}
    # A task with a typed answer offers its own submit_answer (the declared type, checked
    # by the gateway): served as it is, and a successful call ends the episode too.
    typed_answer = ANSWER_TOOL in names
    offered = [
        Tool(
            name=schema.name,
            description=schema.description,
            input_schema=dict(schema.parameters),
            annotations=ToolAnnotations(read_only_hint=schema.kind is ToolKind.READ),
        )
        for schema in host.tools
    ]
    if answer_tool and not typed_answer:
        offered.append(
            Tool(
                name=ANSWER_TOOL,
                description="Hand in your final answer to the task. This ends the episode.",
                input_schema=_ANSWER_SCHEMA,
            )
        )

    offered_names = {tool.name for tool in offered}
    one_at_a_time = asyncio.Lock()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=offered)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        # One call at a time, checked inside: a call that waited behind submit_answer is
        # refused, never run after the episode's end.
        async with one_at_a_time:
            return await serve_call(params)

    async def serve_call(params: CallToolRequestParams) -> CallToolResult:
        if state.done.is_set():  # answered or crashed: nothing more runs or is scored
            why = "an answer was handed in" if state.crash is None else "the harness failed"
            return _text(f"error: the episode is over ({why}); no more tool calls", error=True)
        try:  # the agent's bytes: plain, bounded JSON data before anything else sees them
            arguments = ingress.json_object(params.arguments or {}, "arguments")
        except ingress.IngressError as exc:  # the agent's error, answered as a result
            return _text(f"error: {exc}", error=True)
        if answer_tool and not typed_answer and params.name == ANSWER_TOOL:
            state.answer = str(arguments.get("answer", ""))
            state.done.set()
            return _text("Answer recorded; the episode is over.", error=False)
        try:
            # An unknown name goes to the gateway too, so the bad call is recorded and counted.
            result = await host.call_tool(params.name, arguments)
        except Exception as exc:  # a harness failure: end the episode, tell the client
            state.crash = exc
            state.done.set()
            return _text(f"error: the harness failed: {exc}", error=True)
        if params.name not in offered_names:  # the MCP spec: a JSON-RPC error, not isError
            from mcp.shared.exceptions import MCPError

            known = ", ".join(sorted(offered_names))
            raise MCPError(
                code=INVALID_PARAMS, message=f"Unknown tool: {params.name[:100]!r}; tools: {known}"
            )
        if typed_answer and params.name == ANSWER_TOOL and not result.is_error:
            value = arguments.get("answer")
            state.answer = value if isinstance(value, str) else json.dumps(value)
            state.done.set()
        return _text(result.content, error=result.is_error)

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        prompt = Prompt(name=TASK_PROMPT, description="The task, with its system prompt.")
        return ListPromptsResult(prompts=[prompt])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: GetPromptRequestParams
    ) -> GetPromptResult:
        if params.name != TASK_PROMPT:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=INVALID_PARAMS, message=f"no prompt named {params.name!r}")
        content = TextContent(type="text", text=task_text(host))
        return GetPromptResult(
            description="The task, with its system prompt.",
            messages=[PromptMessage(role="user", content=content)],
        )

    return Server(
        "toolproof",
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _text(text: str, *, error: bool) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)
