"""The simulated user of one episode: one object, two faces, one transcript.

:class:`EpisodeUser` is the only way the engine and the tools reach the user::

    ask_user face      tool ask_user(question) ─▶ ctx.user.ask(question) ─▶ simulator.reply
                       (every exchange kept in ``transcript``)
    conversation face  open()                    ─▶ simulator.open(description): the opening
                       after(agent's text, turn) ─▶ simulator.answer(description, history)
                       ... until the answer holds STOP_TOKEN ("###STOP###"), ``user.max_turns``
                       answers were sent, or the agent replies with no text
    the task's turns   after(agent's text, turn) ─▶ the task's next ``user_turns`` message
    replay             resume(...): the transcript and the conversation rebuilt from a
                       recorded episode (time travel), so the simulator sees the same past

Both faces share the simulator (made once, on first use) and its name, so a scripted or
model-played user that answered a question under ``ask_user`` is the same user that talks
in conversation. The engine writes the turns into the trajectory; this class only says
what the user says next and whether the episode ends (:class:`FollowUp`).
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Literal

from toolproof.spec import TaskInstance
from toolproof.spec.user import STOP_TOKEN
from toolproof.tools import ToolError
from toolproof.tools.context import NO_USER
from toolproof.trajectory import Step

from .base import (
    Exchange,
    UserModelError,
    UserSimulator,
    Utterance,
    simulator_builder,
    usable,
    user_simulators,
)

EndReason = Literal["user_stop", "max_turns", "agent_silent"]
"""Why a conversation ended: the user said ``STOP_TOKEN``, ``user.max_turns`` answers were
sent, or the agent replied with no text."""


@dataclass(frozen=True)
class Opening:
    """A conversation's first user message, and the simulator that wrote it."""

    text: str
    by: str


@dataclass(frozen=True)
class FollowUp:
    """What follows a reply of the agent without tool calls.

    Attributes:
        text: The next user message; when ``ends``, the user's closing words (or None).
        ends: True when the episode ends with this reply.
        by: The simulator that wrote ``text`` (conversations; None for a task's own turns).
        why: Why the conversation ended (None: it goes on, or the task's turns ran out).
        user_s: Seconds the user simulator took (not the agent's time).
    """

    text: str | None
    ends: bool
    by: str | None = None
    why: EndReason | None = None
    user_s: float = 0.0


async def _said(value: str | Awaitable[str]) -> str:
    return str(await value if inspect.isawaitable(value) else value)


class EpisodeUser:
    """The user of one episode (see the module's docstring).

    Args:
        instance: The rendered task: its ``user:`` section, ``user_turns`` and description.
        simulator: Plays the user instead of the task's registered choice (the run's
            model-played user, a test's stand-in).
    """

    def __init__(self, instance: TaskInstance, simulator: UserSimulator | None = None) -> None:
        self.instance = instance
        self._simulator = simulator
        spec = instance.task.user
        self.conversation = spec is not None and spec.mode == "conversation"
        self.transcript: list[Exchange] = []
        """The questions asked under ``ask_user`` and the replies given, in order."""
        self.history: list[Utterance] = []
        """The conversation so far (``user.mode: conversation``), the opening first."""

    @property
    def active(self) -> bool:
        """Whether the episode may have more than one user turn."""
        return self.conversation or bool(self.instance.task.user_turns)

    @property
    def simulator(self) -> UserSimulator:
        """The simulator playing this user: the one given, else the task's, made once.

        Raises:
            ToolError: the task has no user, or names a simulator nobody registered.
        """
        if self._simulator is not None:
            return self._simulator
        spec = self.instance.task.user
        if spec is None:
            raise ToolError(NO_USER)
        builder = simulator_builder(spec.simulator)
        if builder is None:
            raise ToolError(
                f"user simulator {spec.simulator!r} is not available "
                f"(known: {', '.join(user_simulators())})",
                kind="unavailable",
            )
        self._simulator = builder(spec, self.instance)
        return self._simulator

    # ------------------------------------------------------------------ the ask_user face

    async def ask(self, question: str) -> tuple[str, str]:
        """The user's reply to the agent's ``question`` and who gave it; kept in the transcript.

        Raises:
            ToolError: see :attr:`simulator`.
        """
        simulator = self.simulator
        text = await _said(simulator.reply(question, tuple(self.transcript)))
        self.transcript.append(Exchange(question=question, reply=text, answered_by=simulator.name))
        return text, simulator.name

    # ------------------------------------------------------------------ the conversation face

    async def open(self) -> Opening | None:
        """The conversation's opening (None: the task's description opens, as written).

        Raises:
            UserModelError: the simulator's opening holds no usable text.
        """
        if not self.conversation:
            return None
        simulator = self.simulator
        request = self.instance.task.description
        opener = getattr(simulator, "open", None)  # a simulator made for ask_user: the request
        said = await _said(opener(request)) if callable(opener) else request
        text = usable(simulator.name, said).replace(STOP_TOKEN, "").strip()
        if not text:
            raise UserModelError(f"the user {simulator.name} opened the conversation with no text")
        self.history = [Utterance("user", text)]
        return Opening(text, simulator.name)

    async def after(self, reply: str | None, turn: int) -> FollowUp:
        """What follows the agent's ``reply`` (no tool calls) in user turn ``turn``.

        Raises:
            UserModelError: the user model gave no usable answer (the harness's failure).
        """
        task = self.instance.task
        if not self.conversation:
            if turn < len(task.user_turns):
                return FollowUp(task.user_turns[turn].content, ends=False)
            return FollowUp(None, ends=True)
        assert task.user is not None  # a conversation has a user section
        text = (reply or "").strip()
        if not text:
            return FollowUp(None, ends=True, why="agent_silent")
        if turn >= task.user.max_turns:
            return FollowUp(None, ends=True, why="max_turns")
        simulator = self.simulator
        history = [*self.history, Utterance("agent", text)]
        u0 = time.perf_counter()
        answerer = getattr(simulator, "answer", None)
        if callable(answerer):
            said = answerer(task.description, tuple(history))
        else:  # a simulator made for ask_user: it answers, and never stops
            said = simulator.reply(text, ())
        answer = usable(simulator.name, await _said(said)).strip()
        user_s = time.perf_counter() - u0
        if STOP_TOKEN in answer:
            closing = answer.replace(STOP_TOKEN, "").strip()
            return FollowUp(closing or None, True, simulator.name, "user_stop", user_s)
        if not answer:
            raise UserModelError(f"the user {simulator.name} answered with no text")
        self.history = [*history, Utterance("user", answer)]
        return FollowUp(answer, False, simulator.name, None, user_s)

    # ------------------------------------------------------------------ replay

    def resume(
        self, opening: str | None, turns: Sequence[tuple[str, str]], steps: Sequence[Step]
    ) -> None:
        """Rebuild this user's past from a recorded episode (time travel).

        Args:
            opening: The recorded prompt's user message.
            turns: The conversation after it: (the agent's reply, the user's next message).
            steps: The recorded steps, whose ``ask_user`` calls refill the transcript.
        """
        self.transcript.extend(asked_in(steps))
        if self.conversation:
            self.history = [Utterance("user", opening or "")]
            for agent, user in turns:
                self.history += [Utterance("agent", agent), Utterance("user", user)]


def asked_in(steps: Sequence[Step]) -> list[Exchange]:
    """The exchanges of recorded steps' ``ask_user`` calls (their results as the tool wrote
    them: ``{"reply": ..., "answered_by": ...}``); a failed or unreadable one is skipped."""
    found: list[Exchange] = []
    for step in steps:
        by_id = {r.call_id: r for r in step.results}
        for call in step.message.tool_calls:
            result = by_id.get(call.id)
            if call.name != "ask_user" or result is None or result.is_error:
                continue
            try:
                said = json.loads(result.content)
            except ValueError:
                continue
            if isinstance(said, dict) and isinstance(said.get("reply"), str):
                question = str(call.arguments.get("question", ""))
                by = str(said.get("answered_by", ""))
                found.append(Exchange(question=question, reply=said["reply"], answered_by=by))
    return found
