"""The Agent protocol and the registry of agent kinds.

Two ways to drive an agent (see ARCHITECTURE.md):

* harness-driven: the engine owns the loop and calls :meth:`Agent.act` with the
  transcript and the tool schemas; the agent returns its next turn;
* agent-driven: the agent owns its loop; :meth:`DrivenAgent.run` gets a
  :class:`ToolSession` whose ``call_tool`` goes through the gateway and is recorded.

An agent *spec* such as ``openai:gpt-4o`` names a registered kind (``openai``)
and a target (``gpt-4o``); the kind's builder makes one agent per episode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from toolproof.spec import Problem, SpecError, TaskInstance
from toolproof.trajectory import Message, ToolCall, ToolResult, ToolSchema, Usage


class AgentTurn(BaseModel):
    """What an agent does in one turn: tool calls, or a final answer (no tool calls)."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    give_up: bool = Field(False, description="The agent says it cannot do the task.")
    retries: int = Field(
        0, ge=0, description="Provider retries this turn took (429, 5xx, timeouts); 0 when none."
    )


class Observation(BaseModel):
    """What the agent is given each turn."""

    messages: list[Message]
    tools: list[ToolSchema]
    step: int


class AgentInfraError(Exception):
    """The agent's provider failed (after retries): an infra error, not the agent's fault."""


@runtime_checkable
class Agent(Protocol):
    """A harness-driven agent: one required method."""

    async def act(self, observation: Observation) -> AgentTurn:
        """Return the next turn given the transcript so far."""
        ...


class ToolSession(Protocol):
    """The tools of one episode as an agent-driven agent uses them."""

    @property
    def system_prompt(self) -> str: ...

    @property
    def prompt(self) -> str: ...

    @property
    def tools(self) -> list[ToolSchema]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run a tool through the gateway; the call is recorded as a step."""
        ...

    def record_usage(self, usage: Usage) -> None:
        """Add model usage the agent incurred to the episode."""
        ...


@runtime_checkable
class DrivenAgent(Protocol):
    """An agent that owns its loop."""

    async def run(self, session: ToolSession) -> str:
        """Do the task with the session's tools; return the final answer."""
        ...


@dataclass(frozen=True)
class AgentSpec:
    """A parsed agent spec: ``kind[:target]`` plus ``--agent-arg`` options."""

    kind: str
    target: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The spec as written, e.g. ``openai:gpt-4o``."""
        return self.kind if self.target is None else f"{self.kind}:{self.target}"


@dataclass(frozen=True)
class EpisodeContext:
    """What an agent factory knows about the episode it makes an agent for."""

    instance: TaskInstance
    tools: list[ToolSchema]


AgentFactory = Callable[[EpisodeContext], "Agent | DrivenAgent"]
"""Makes the agent of one episode."""

AgentBuilder = Callable[[AgentSpec], AgentFactory]
"""Checks a spec once per run and returns the per-episode factory."""

_REGISTRY: dict[str, AgentBuilder] = {}


def agent(kind: str) -> Callable[[AgentBuilder], AgentBuilder]:
    """Register an agent kind by name.

    Raises:
        ValueError: the kind is already registered.
    """

    def register(builder: AgentBuilder) -> AgentBuilder:
        if kind in _REGISTRY:
            raise ValueError(f"agent kind {kind!r} is already registered")
        _REGISTRY[kind] = builder
        return builder

    return register


def agent_kinds() -> list[str]:
    """Registered agent kinds."""
    from .builtin import load_builtin

    load_builtin()
    return sorted(_REGISTRY)


def parse_agent_spec(text: str, options: dict[str, Any] | None = None) -> AgentSpec:
    """Split ``kind:target`` (the target may itself contain colons)."""
    kind, _, target = text.partition(":")
    return AgentSpec(kind=kind.strip(), target=target.strip() or None, options=dict(options or {}))


def build_agent(spec: AgentSpec) -> AgentFactory:
    """The per-episode factory for a spec.

    Raises:
        SpecError: unknown kind (listing the valid ones) or a bad target.
    """
    kinds = agent_kinds()
    if spec.kind not in _REGISTRY:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"unknown agent {spec.label!r}; valid kinds: {', '.join(kinds)} "
                    "(e.g. oracle, openai:MODEL, python:module:attr)",
                )
            ]
        )
    return _REGISTRY[spec.kind](spec)
