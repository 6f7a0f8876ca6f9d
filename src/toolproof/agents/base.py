"""The Agent protocol and the registry of agent kinds.

Two ways to drive an agent (see ARCHITECTURE.md):

* harness-driven: the engine owns the loop and calls :meth:`Agent.act` with the
  transcript and the tool schemas; the agent returns its next turn;
* agent-driven: the agent owns its loop; :meth:`DrivenAgent.run` gets a
  :class:`ToolSession` whose ``call_tool`` goes through the gateway and is recorded.

An agent *spec* such as ``openai:gpt-4o`` names a registered kind (``openai``)
and a target (``gpt-4o``); the kind's builder makes one agent per episode.

What an agent is handed is what a remote agent would get (ARCHITECTURE.md, invariant 3):
an :class:`EpisodeContext` (prompt, tool schemas, task id, epoch, limits), then its
observations. The answer key (the rendered task with its solution, checks, params and
hidden world) goes only to the built-in agents that need it (``oracle``, ``random``, the
flawed agents), through :func:`with_key` factories that the engine alone calls with the
instance (:func:`make_agent`). A ``python:`` or framework factory is never given one.
"""

from __future__ import annotations

import marshal
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from toolproof.spec import Limits, Problem, SpecError, TaskInstance
from toolproof.spec._suggest import did_you_mean
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
    """What the agent is given each turn.

    Its messages and tools are the agent's own copies: an agent that edits them (say,
    deletes a call from its past turn) changes nothing the engine records or scores.
    """

    messages: list[Message]
    tools: list[ToolSchema]
    step: int

    @field_validator("messages", "tools", mode="after")
    @classmethod
    def _own_copies(cls, value: list[Any]) -> list[Any]:
        return [item.model_copy(deep=True) for item in value]


class AgentInfraError(Exception):
    """The agent's provider failed (after retries): an infra error, not the agent's fault.

    Only when toolproof made it (``_outage.observed_outage``: its adapters' retries, the
    model gateway, the command sandbox saw the outage); one raised by an agent's own code
    is that agent's ``agent_error`` (docs/metrics.md, "Infra errors need a witness").
    """


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


def acts(obj: object) -> bool:
    """``isinstance(obj, Agent)``, at the cost of one ``getattr``.

    Python 3.11 works out a runtime protocol's members again at every ``isinstance``;
    with two checks per episode that was a few percent of a run's CPU. The test is the
    protocol's own: the method is there and not None.
    """
    return getattr(obj, "act", None) is not None


def drives(obj: object) -> bool:
    """An agent that owns its loop (``run``) and has no ``act``: what the engine drives
    through a session rather than turn by turn."""
    return getattr(obj, "run", None) is not None and not acts(obj)


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


@dataclass(frozen=True, slots=True)
class EpisodeContext:
    """What an agent factory knows about the episode it makes an agent for.

    Exactly what a remote agent is told: the prompt, the tool schemas and harmless
    facts of the run. Nothing of the task's solution, checks, parameters or hidden
    records is here, nor reachable from here.

    Attributes:
        task_id: The task's id, e.g. ``"stock-sum"``.
        suite: The suite's name, e.g. ``"core"``.
        epoch: Which repetition of the task this episode is, from 0.
        system_prompt: The system message the episode starts with.
        prompt: The user message: the task as the agent is given it.
        tools: The schemas of the tools the agent may call.
        limits: The episode's limits (steps, timeouts, loop threshold).
    """

    task_id: str
    suite: str
    epoch: int
    system_prompt: str
    prompt: str
    tools: list[ToolSchema]
    limits: Limits = field(default_factory=Limits)

    @property
    def messages(self) -> list[Message]:
        """The opening transcript: the system message, then the user message."""
        return [
            Message(role="system", content=self.system_prompt),
            Message(role="user", content=self.prompt),
        ]


def copy_schema(schema: ToolSchema) -> ToolSchema:
    """An independent copy of ``schema`` (its ``parameters`` dict is the copy's own).

    ``ToolSchema`` is frozen, but its ``parameters`` is a plain dict an agent could edit.
    A marshal round trip copies that plain JSON data in C, about ten times faster than
    ``model_copy(deep=True)``; what marshal cannot hold is deep-copied as before.
    """
    try:
        parameters = marshal.loads(marshal.dumps(schema.parameters))
    except ValueError:  # not plain data
        return schema.model_copy(deep=True)
    return ToolSchema.model_construct(
        _fields_set=set(schema.model_fields_set),
        name=schema.name,
        description=schema.description,
        parameters=parameters,
        kind=schema.kind,
    )


def episode_context(instance: TaskInstance, tools: list[ToolSchema]) -> EpisodeContext:
    """The agent's view of an episode: copies of the visible parts of ``instance``, no more."""
    return EpisodeContext(
        task_id=instance.task.id,
        suite=instance.suite,
        epoch=instance.epoch,
        system_prompt=instance.system_prompt,
        prompt=instance.task.description,
        tools=[copy_schema(t) for t in tools],
        limits=instance.limits.model_copy(),  # flat: numbers only
    )


AgentFactory = Callable[[EpisodeContext], "Agent | DrivenAgent"]
"""Makes the agent of one episode."""

KeyedMaker = Callable[[EpisodeContext, TaskInstance], "Agent | DrivenAgent"]
"""Makes a built-in agent that needs the answer key: ``(context, instance) -> agent``."""


class KeyedFactory:
    """A built-in agent's factory that the engine hands the task instance (see :func:`with_key`).

    Calling it like a plain factory, with only a context, is refused: the instance
    comes from :func:`make_agent`, which the engine calls, never from the agent side.
    """

    __slots__ = ("_make",)

    def __init__(self, make: KeyedMaker) -> None:
        self._make = make

    def __call__(self, ctx: EpisodeContext) -> Agent | DrivenAgent:
        """Refuse: a keyed factory is made by the engine, with the instance."""
        raise TypeError(
            "this built-in agent plays the task's answer key and can only be made by the "
            "engine (toolproof.agents.make_agent); run it by its name, e.g. --agent oracle"
        )


def with_key(make: KeyedMaker) -> KeyedFactory:
    """Mark a built-in kind's factory as one that is given the answer key.

    For harness-side agents only (``oracle``, ``random``, the flawed test agents):
    the ``python`` and framework kinds never return one, so a user's code is not
    handed the instance.
    """
    return KeyedFactory(make)


def make_agent(
    factory: AgentFactory, instance: TaskInstance, tools: list[ToolSchema]
) -> Agent | DrivenAgent:
    """Make one episode's agent: the instance goes to a :func:`with_key` factory only.

    Any other factory gets the :class:`EpisodeContext` alone; this function keeps no
    reference to the instance while it runs (``del``), so the factory's caller frame
    does not hold the key either.
    """
    ctx = episode_context(instance, tools)
    if isinstance(factory, KeyedFactory):
        return factory._make(ctx, instance)
    del instance
    return factory(ctx)


class _AgentSession:
    """The :class:`ToolSession` an agent-driven agent is handed: tools, prompt, nothing else.

    The engine's session holds the recorder, the world and the task; this view reaches
    it through a weak reference only, so no attribute, closure or ``gc.get_referents``
    of what the agent holds leads to them. Results lose their timing (it stays in the
    trajectory): what the agent sees depends on its actions, not on the clock.
    """

    __slots__ = ("__weakref__", "_prompt", "_ref", "_system_prompt", "_tools")

    def __init__(self, session: ToolSession) -> None:
        self._system_prompt = session.system_prompt
        self._prompt = session.prompt
        self._tools = [copy_schema(t) for t in session.tools]
        self._ref: Callable[[], ToolSession | None] = weakref.ref(session)

    @property
    def system_prompt(self) -> str:
        """The system message."""
        return self._system_prompt

    @property
    def prompt(self) -> str:
        """The task as the agent is given it."""
        return self._prompt

    @property
    def tools(self) -> list[ToolSchema]:
        """The tool schemas."""
        return list(self._tools)

    def _session(self) -> ToolSession:
        session = self._ref()
        if session is None:
            raise RuntimeError("the episode is over; its tools cannot be called any more")
        return session

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run a tool through the gateway (recorded as a step); the result without timing.

        The session copies the arguments into bounded plain data before anything uses them
        (refusing, as an error result, what is not JSON data), so editing them afterwards
        does not change the record.
        """
        result = await self._session().call_tool(name, arguments)
        return result.model_copy(update={"duration_s": 0.0})

    def record_usage(self, usage: Usage) -> None:
        """Add model usage the agent incurred to the episode."""
        self._session().record_usage(usage)

    def record_model_call(self, call: dict[str, Any]) -> None:
        """List a model call the model gateway saw on the episode's next step."""
        record = getattr(self._session(), "record_model_call", None)
        if callable(record):
            record(call)


def agent_session(session: ToolSession) -> ToolSession:
    """The view of ``session`` to hand an agent-driven agent (see :class:`_AgentSession`)."""
    return _AgentSession(session)


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
    from .builtin import load_builtin

    load_builtin(spec.kind)  # a built-in kind's module only (a plug-in that took its name fails)
    if spec.kind not in _REGISTRY:
        kinds = agent_kinds()
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"unknown agent {spec.label!r}; valid kinds: {', '.join(kinds)} "
                    "(e.g. oracle, openai:MODEL, python:module:attr)"
                    + did_you_mean(spec.kind, kinds),
                )
            ]
        )
    return _REGISTRY[spec.kind](spec)
