"""``ask_user``: the agent's only way to reach the simulated user of a task.

The task's ``user:`` section (:class:`~toolproof.spec.UserSpec`) says what the
user knows; a *user simulator* answers each question. The built-in
``scripted`` simulator is deterministic (keyword rules, see
:meth:`UserSpec.scripted_reply`); another simulator, e.g. one played by a
model, plugs in by name::

    @user_simulator("llm")
    def build(spec: UserSpec, instance: TaskInstance | None) -> UserSimulator: ...

and is chosen by ``user.simulator: llm`` in the task, or for a whole run by
putting a simulator in ``ToolContext.scratch["user_simulator"]``. Every reply
names the simulator that gave it (``answered_by``), so the trajectory records
who played the user.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from toolproof.spec import TaskInstance, UserSpec
from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool

SCRATCH_SIMULATOR = "user_simulator"
"""``ToolContext.scratch`` key of a simulator that overrides the task's choice."""

SCRATCH_TRANSCRIPT = "user_transcript"
"""``ToolContext.scratch`` key of the episode's list of :class:`Exchange`."""


@dataclass(frozen=True)
class Exchange:
    """One question to the user and its reply."""

    question: str
    reply: str
    answered_by: str


@runtime_checkable
class UserSimulator(Protocol):
    """Plays the user of one episode. One required method, plus a name for the record."""

    @property
    def name(self) -> str:
        """Who answers, as recorded in the trajectory, e.g. 'scripted' or 'llm:gpt-4o'."""
        ...

    def reply(self, question: str, transcript: Sequence[Exchange]) -> str | Awaitable[str]:
        """The user's reply to ``question``, given the earlier exchanges of the episode."""
        ...


SimulatorBuilder = Callable[[UserSpec, TaskInstance | None], UserSimulator]
"""Makes the simulator of one episode from the task's user and its instance."""

_SIMULATORS: dict[str, SimulatorBuilder] = {}


def user_simulator(kind: str) -> Callable[[SimulatorBuilder], SimulatorBuilder]:
    """Register a user simulator by name.

    Raises:
        ValueError: the name is taken.
    """

    def register(builder: SimulatorBuilder) -> SimulatorBuilder:
        if kind in _SIMULATORS:
            raise ValueError(f"user simulator {kind!r} is already registered")
        _SIMULATORS[kind] = builder
        return builder

    return register


def user_simulators() -> list[str]:
    """Names of the registered user simulators."""
    return sorted(_SIMULATORS)


class ScriptedUser:
    """The deterministic user: answers by the keyword rules of the task's ``user`` section."""

    name = "scripted"

    def __init__(self, spec: UserSpec) -> None:
        self.spec = spec

    def reply(self, question: str, transcript: Sequence[Exchange]) -> str:
        """Apply :meth:`UserSpec.scripted_reply`; the transcript counts earlier questions."""
        text, _ = self.spec.scripted_reply(question, asked_before=len(transcript))
        return text


@user_simulator("scripted")
def _build_scripted(spec: UserSpec, instance: TaskInstance | None) -> UserSimulator:
    return ScriptedUser(spec)


def simulator_for(ctx: ToolContext) -> UserSimulator:
    """The episode's simulator: the one in ``scratch``, else the task's, made once.

    Raises:
        ToolError: the task has no user, or names a simulator nobody registered.
    """
    existing = ctx.scratch.get(SCRATCH_SIMULATOR)
    if existing is not None:
        if not isinstance(existing, UserSimulator):
            raise TypeError(f"scratch[{SCRATCH_SIMULATOR!r}] has no reply(): {existing!r}")
        return existing
    spec = ctx.instance.task.user if ctx.instance is not None else None
    if spec is None:
        raise ToolError("there is no user to ask in this task; do it with the other tools")
    builder = _SIMULATORS.get(spec.simulator)
    if builder is None:
        raise ToolError(
            f"user simulator {spec.simulator!r} is not available "
            f"(known: {', '.join(user_simulators())})",
            kind="unavailable",
        )
    made = builder(spec, ctx.instance)
    ctx.scratch[SCRATCH_SIMULATOR] = made
    return made


def transcript_of(ctx: ToolContext) -> list[Exchange]:
    """The questions asked and replies given so far in this episode."""
    log = ctx.scratch.setdefault(SCRATCH_TRANSCRIPT, [])
    assert isinstance(log, list)
    return log


@tool(kind=ToolKind.READ)
async def ask_user(ctx: ToolContext, question: str) -> dict[str, Any]:
    """Ask the user who gave you the task a question and get their reply.

    Use it when the task leaves out something only the user knows (which
    account, which date, which file); ask one clear question at a time.

    Args:
        question: The question, e.g. "Which account should I pay from?".
    """
    if not question.strip():
        raise ToolError("the question is empty; ask something specific")
    simulator = simulator_for(ctx)
    log = transcript_of(ctx)
    reply = simulator.reply(question, tuple(log))
    if inspect.isawaitable(reply):
        reply = await reply
    text = str(reply)
    log.append(Exchange(question=question, reply=text, answered_by=simulator.name))
    return {"reply": text, "answered_by": simulator.name}
