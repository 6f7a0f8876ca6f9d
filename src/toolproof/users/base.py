"""The user simulator protocol, its registry, and what a user's words are made of.

A *user simulator* plays the user of one episode. It answers the agent's questions
(``reply``, the ``ask_user`` face); a simulator that can also hold a conversation
(``user.mode: conversation``) has ``open`` and ``answer`` too (:class:`Conversing`).
Simulators register by name next to their implementation::

    @user_simulator("llm")
    def build(spec: UserSpec, instance: TaskInstance | None) -> UserSimulator: ...

and a task picks one with ``user.simulator: llm``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from toolproof.spec import TaskInstance, UserSpec
from toolproof.trajectory import ingress


@dataclass(frozen=True)
class Exchange:
    """One question to the user and its reply."""

    question: str
    reply: str
    answered_by: str


@dataclass(frozen=True)
class Utterance:
    """One message of a conversation (``user.mode: conversation``): who said it, and what."""

    speaker: Literal["user", "agent"]
    text: str


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


@runtime_checkable
class Conversing(Protocol):
    """A simulator that can hold a conversation: it opens, and answers every reply."""

    def open(self, request: str) -> str | Awaitable[str]:
        """The conversation's first message, from the task's request."""
        ...

    def answer(self, request: str, history: Sequence[Utterance]) -> str | Awaitable[str]:
        """The next user message (it holds ``STOP_TOKEN`` when the user is done)."""
        ...


class UserModelError(Exception):
    """The model playing the user gave no usable reply (an HTTP error, no text, text that is
    not valid Unicode).

    It is not a ``ToolError``, so the tool gateway reports it as a crash, and who is to blame
    is decided by what toolproof witnessed (invariant 8): when the model gateway saw the
    user model's provider fail after its retries (an outage, a 5xx; the user's gateway link
    holds an ``infra_error``), the episode ends ``infra_error`` (retried, kept out of the
    scores). Otherwise, for example a refusal or an empty reply to what the agent asked
    (an HTTP 400 "content policy", ``content: null``), the agent may have provoked it, and
    the episode is the agent's ``agent_error`` (``engine.faults.crash_outcome``).
    """


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


def simulator_builder(kind: str) -> SimulatorBuilder | None:
    """The builder registered as ``kind``, or None."""
    return _SIMULATORS.get(kind)


def usable(name: str, text: str) -> str:
    """The user's text, if it can be recorded: a lone surrogate from the user's model (a JSON
    escape such as ``\\udcff`` alone) is refused as a :class:`UserModelError` (which says
    who is blamed: the agent, unless the gateway witnessed the provider failing).

    Raises:
        UserModelError: the text is not valid Unicode.
    """
    at = ingress.lone_surrogate(text)
    if at is not None:
        raise UserModelError(
            f"the user {name} answered with text that is not valid Unicode (a lone surrogate "
            f"at character {at:,})"
        )
    return text
