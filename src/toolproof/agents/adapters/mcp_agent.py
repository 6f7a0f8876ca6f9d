"""MCP client agents: ``mcp:module:function`` (in process) and ``mcp-serve`` (anyone outside).

``mcp:module:function`` — an async function that is an MCP client::

    async def my_agent(task: toolproof.mcp.McpTask) -> str:
        async with task.connect() as session:      # an initialized mcp.ClientSession
            ...                                    # list and call the task's tools
        return "the final answer"

For each episode the task's tools are served over MCP streamable HTTP on
127.0.0.1 (``task.url``, for any MCP client or framework adapter) while the
function runs; every call is validated by the gateway and recorded. Its model goes
through the episode's model gateway path, as a framework agent's does: ``task.options``
holds ``base_url`` (that path, for the run's ``provider``), ``api_key`` (a placeholder),
``provider``, ``model`` and the run's other ``--agent-arg`` values, never the real key,
``cache`` or ``prices``; so every model call is recorded, priced and cached by ``--cache``.

``mcp-serve[:stdio|:http]`` — the agent is whoever connects from outside (a
desktop assistant, a coding agent); the episode lasts until that client is
done. ``toolproof serve-mcp`` is built on it. Options: ``host``, ``port``,
``answer_tool`` (offer ``submit_answer``), ``stop_on_signal``, ``announce``,
``ready_line`` (one JSON line on stderr once a client can connect).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolproof.spec import Problem, SpecError

from ..base import AgentFactory, AgentSpec, EpisodeContext, ToolSession, agent
from ..builtin.python_agent import import_target
from ._options import parse_options
from ._tools_bridge import require_extra
from ._via_gateway import GatewayPlan, agent_options, episode_link, gateway_plan


class McpClientAgent:
    """Runs a user's async MCP client function against the episode's tools.

    Args:
        function: ``async (McpTask) -> str``.
        options: The run's ``--agent-arg`` values; ``McpTask.options`` gets them with the
            model gateway's ``base_url`` and placeholder ``api_key`` (:func:`agent_options`).
        plan: The run's model gateway route (one per run: shared backoff, cache).
        epoch: The episode's epoch (part of the model-call cache key).
    """

    def __init__(
        self,
        function: Callable[..., Any],
        options: dict[str, Any],
        plan: GatewayPlan | None = None,
        epoch: int = 0,
    ) -> None:
        self.function = function
        self.options = options
        self.plan = plan or gateway_plan(options, "mcp")
        self.epoch = epoch

    async def run(self, session: ToolSession) -> str:
        """Serve the tools over HTTP while the function runs; return its answer.

        Raises:
            AgentInfraError: a model call through the gateway failed for reasons not the
                agent's (the gateway saw the outage).
        """
        from toolproof.mcp import HttpEndpoint, McpTask, ServeState, build_server

        state = ServeState()
        async with (
            episode_link(self.plan, self.epoch, session) as link,
            HttpEndpoint(build_server(session, state)) as endpoint,
        ):
            task = McpTask(
                url=endpoint.url,
                prompt=session.prompt,
                system_prompt=session.system_prompt,
                options=agent_options(self.plan, link.urls(), self.options),
            )
            answer = await self.function(task)
        if state.crash is not None:
            raise state.crash
        if not isinstance(answer, str):
            raise TypeError(f"the MCP agent returned {type(answer).__name__}, not the answer text")
        return answer


@agent("mcp")
def build_client(spec: AgentSpec) -> AgentFactory:
    """``mcp:module:function``; needs ``pip install 'toolproof[mcp]'``."""
    if not spec.target:
        raise SpecError(
            [Problem(None, None, "agent", "mcp agents need a function: mcp:module:function")]
        )
    require_extra("mcp", ("mcp",), "mcp")
    function = import_target(spec.target, "agent")
    if not inspect.iscoroutinefunction(function):
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"{spec.target} must be an async function (task: McpTask) -> str",
                )
            ]
        )

    plan = gateway_plan(spec.options, spec.label)  # checks provider and the model options

    def factory(ctx: EpisodeContext) -> McpClientAgent:
        return McpClientAgent(function, spec.options, plan, ctx.epoch)

    return factory


MODEL_FLAGS = {
    "cache": "--cache",
    "model": "--model",
    "provider": "--model",
    "base_url": "--agent-arg base_url",
    "api_key": "--agent-arg api_key",
    "prices": "--agent-arg prices",
    "max_model_calls": "--max-model-calls",
}
"""Model settings, by the flag that sets them: meaningless for ``mcp-serve``."""


def _refuse_model_options(spec: AgentSpec) -> None:
    """``mcp-serve``'s agent is a client outside toolproof, whose model toolproof never sees.

    Raises:
        SpecError: ``--cache``, ``--model`` or another model setting was given.
    """
    given = [name for name in MODEL_FLAGS if name in spec.options]
    if given:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    MODEL_FLAGS[name],
                    "mcp-serve's agent is the MCP client that connects from outside; its model "
                    "calls never pass through toolproof, so they cannot be cached, priced or "
                    f"chosen here; drop {MODEL_FLAGS[name]} (an mcp:module:function agent "
                    "in process, or a cmd: agent, calls its model through the gateway)",
                )
                for name in given
            ]
        )


class ServeOptions(BaseModel):
    """Options of ``mcp-serve`` (``--agent-arg key=value``)."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="HTTP interface; keep it local.")
    port: int = Field(0, ge=0, le=65535, description="HTTP port; 0 picks a free one.")
    answer_tool: bool = Field(False, description="Offer submit_answer for the final answer.")
    stop_on_signal: bool = Field(False, description="SIGINT/SIGTERM end the episode, scored.")
    announce: bool = Field(True, description="Say on stderr what is served where.")
    ready_line: bool = Field(
        False, description="Write one JSON line on stderr once a client can connect."
    )


@agent("mcp-serve")
def build_serve(spec: AgentSpec) -> AgentFactory:
    """``mcp-serve[:stdio|:http]``; needs ``pip install 'toolproof[mcp]'``."""
    from toolproof.mcp import McpServeAgent

    transport = spec.target or "http"
    if transport not in ("stdio", "http"):
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"mcp-serve serves over 'stdio' or 'http', not {transport!r}",
                )
            ]
        )
    require_extra("mcp-serve", ("mcp",), "mcp")
    _refuse_model_options(spec)
    options = parse_options(ServeOptions, spec)

    def factory(ctx: EpisodeContext) -> McpServeAgent:
        return McpServeAgent(
            "stdio" if transport == "stdio" else "http",
            host=options.host,
            port=options.port,
            answer_tool=options.answer_tool,
            stop_on_signal=options.stop_on_signal,
            announce=sys.stderr if options.announce else None,
            ready=sys.stderr if options.ready_line else None,
        )

    return factory
