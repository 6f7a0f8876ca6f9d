"""Further user turns of an episode: the task's ``user_turns``, or a user in conversation.

A task's ``user_turns`` are sent one by one, each when the agent replies without a
tool call (see ``_loop`` in :mod:`.episode`). A task whose user is in conversation
(``user.mode: conversation``, as in tau2-bench) opens with the user's first message
instead of the description, and each reply of the agent without a tool call goes
to the user simulator, whose answer is the next user message::

    opening   simulator.open(description)  ─▶ the prompt's user message
    reply     agent text ─▶ simulator.answer(description, history) ─▶ next user message
              ... until the answer holds STOP_TOKEN ("###STOP###"), user.max_turns
              answers were sent, or the agent replies with no text

Every step of such an episode carries the :data:`USER_TURN` annotation, and the step
that ends a turn :data:`NEXT_USER_TURN` (the next user message is in its
``observations``), so that a replay, a scorer or the viewer can split the steps per
turn. In a conversation, a step whose observations hold a user message names who
wrote it (:data:`USER_BY`), the first step who opened (:data:`OPENED_BY`), and the
last step why it ended (:data:`CONVERSATION_END`; the user's closing words, if any,
are its observations). The answer scored is the agent's last reply.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolproof.spec import Problem, SpecError, TaskInstance
from toolproof.spec.user import STOP_TOKEN
from toolproof.tools import ToolContext
from toolproof.tools.toolkits.user import (
    UserModelError,
    UserSimulator,
    Utterance,
    restore_transcript,
    simulator_for,
)
from toolproof.trajectory import Message, Step, ingress

USER_TURN = "user_turn"
"""Step annotation: the index of the user turn the step belongs to (0: the first prompt)."""
NEXT_USER_TURN = "next_user_turn"
"""Step annotation on a turn's last step: the user turn its observations start."""
USER_BY = "user_by"
"""Step annotation (conversations): the simulator that wrote the user message after it."""
OPENED_BY = "opened_by"
"""Step annotation on a conversation's first step: the simulator that wrote the opening."""
CONVERSATION_END = "conversation_end"
"""Step annotation on a conversation's last step: ``user_stop`` (the user said
:data:`STOP_TOKEN`), ``max_turns`` (``user.max_turns`` answers were sent) or
``agent_silent`` (the agent replied with no text)."""
EXTRA = "user_turns"
"""``world.extras`` key of the episode's :class:`UserTurns` (it annotates the first step)."""


def current_user_turn(steps: Sequence[Step]) -> int:
    """The user turn the next step belongs to, after ``steps``."""
    if not steps:
        return 0
    notes = steps[-1].annotations
    return int(notes.get(NEXT_USER_TURN, notes.get(USER_TURN, 0)))


@dataclass
class FollowUp:
    """What follows a reply of the agent without tool calls.

    Attributes:
        message: The next user message; when ``ends``, the user's closing words (or None).
        ends: True when the episode ends with this reply.
        notes: Annotations of the reply's step.
        user_s: Seconds the user simulator took (not the agent's time).
    """

    message: Message | None
    ends: bool
    notes: dict[str, Any] = field(default_factory=dict)
    user_s: float = 0.0


def _in_conversation(instance: TaskInstance) -> bool:
    user = instance.task.user
    return user is not None and user.mode == "conversation"


class UserTurns:
    """The further user messages of one episode (see the module's docstring)."""

    def __init__(self, instance: TaskInstance, ctx: ToolContext) -> None:
        self.instance = instance
        self.ctx = ctx
        self.conversation = _in_conversation(instance)
        self.history: list[Utterance] = []
        self._opened_by: str | None = None

    @property
    def active(self) -> bool:
        """Whether the episode may have more than one user turn."""
        return self.conversation or bool(self.instance.task.user_turns)

    def _simulator(self) -> UserSimulator:
        return simulator_for(self.ctx)

    async def opening(self, prompt: list[Message]) -> list[Message]:
        """The prompt with the conversation's opening as its user message (else as is).

        Raises:
            UserModelError: the simulator's opening holds no text.
        """
        if not self.conversation:
            return prompt
        simulator = self._simulator()
        request = self.instance.task.description
        opener = getattr(simulator, "open", None)
        said = opener(request) if callable(opener) else request
        text = _usable(simulator.name, str(await said if inspect.isawaitable(said) else said))
        text = text.replace(STOP_TOKEN, "").strip()
        if not text:
            raise UserModelError(f"the user {simulator.name} opened the conversation with no text")
        self.history = [Utterance("user", text)]
        self._opened_by = simulator.name
        self.ctx.world.extras[EXTRA] = self
        return [*prompt[:-1], Message(role="user", content=text)]

    def resume(self, prompt: Sequence[Message], steps: Sequence[Step]) -> None:
        """Rebuild the user's side from a recorded prompt and steps (time travel): the
        questions ``ask_user`` answered, and the conversation."""
        restore_transcript(self.ctx, steps)
        if not self.conversation:
            return
        opening = next((m.content for m in reversed(prompt) if m.role == "user"), None)
        self.history = [Utterance("user", opening or "")]
        for step in steps:
            if NEXT_USER_TURN in step.annotations and step.observations:
                self.history.append(Utterance("agent", step.message.content or ""))
                self.history.append(Utterance("user", step.observations[0].content or ""))

    def annotate_step(self, index: int, message: Message, results: list[Any]) -> dict[str, Any]:
        """The opening's author, on the first step (the recorder asks every extra)."""
        if index == 0 and self._opened_by is not None:
            return {OPENED_BY: self._opened_by}
        return {}

    async def after(self, reply: str | None, turn: int) -> FollowUp:
        """What follows the agent's reply ``reply`` (no tool calls) in user turn ``turn``.

        Raises:
            UserModelError: the user model gave no usable answer (the harness's failure).
        """
        user_turns = self.instance.task.user_turns
        if not self.conversation:
            if turn < len(user_turns):
                return FollowUp(Message(role="user", content=user_turns[turn].content), False)
            return FollowUp(None, True)
        spec = self.instance.task.user
        assert spec is not None
        text = (reply or "").strip()
        if not text:
            return FollowUp(None, True, {CONVERSATION_END: "agent_silent"})
        if turn >= spec.max_turns:
            return FollowUp(None, True, {CONVERSATION_END: "max_turns"})
        simulator = self._simulator()
        history = [*self.history, Utterance("agent", text)]
        u0 = time.perf_counter()
        answerer = getattr(simulator, "answer", None)
        if callable(answerer):
            said = answerer(self.instance.task.description, tuple(history))
        else:  # a simulator made for ask_user: it answers, and never stops
            said = simulator.reply(text, ())
        answer = _usable(simulator.name, str(await said if inspect.isawaitable(said) else said))
        answer = answer.strip()
        user_s = time.perf_counter() - u0
        notes: dict[str, Any] = {USER_BY: simulator.name}
        if STOP_TOKEN in answer:
            closing = answer.replace(STOP_TOKEN, "").strip()
            notes[CONVERSATION_END] = "user_stop"
            message = Message(role="user", content=closing) if closing else None
            return FollowUp(message, True, notes, user_s)
        if not answer:
            raise UserModelError(f"the user {simulator.name} answered with no text")
        self.history = [*history, Utterance("user", answer)]
        return FollowUp(Message(role="user", content=answer), False, notes, user_s)


def _usable(name: str, text: str) -> str:
    """The user's text, if it can be recorded: a lone surrogate from the user's model (a JSON
    escape such as ``\\udcff`` alone) is that model's failure, the harness's, not the agent's.

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


def refuse_driven(instance: TaskInstance, agent_label: str) -> None:
    """Stop the run when an agent that owns its loop meets a task with further user turns.

    Such an agent returns one final answer and cannot be sent a follow-up user message;
    running it anyway would score the first turn alone.

    Raises:
        SpecError: the task has user turns, or a user in conversation.
    """
    turns = len(instance.task.user_turns)
    if turns or _in_conversation(instance):
        what = f"has {turns + 1} user turns" if turns else "has a user in conversation"
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"task {instance.task.id} {what}; agent "
                    f"{agent_label!r} owns its loop (run()) and cannot take a follow-up user "
                    "message: use a harness-driven agent (oracle, openai, anthropic, http, or "
                    "a python: agent with act())",
                )
            ]
        )
