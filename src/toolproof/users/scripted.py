"""The scripted user: deterministic replies by the keyword rules of the task's ``user:``.

It plays both faces: ``reply`` answers ``ask_user`` (:meth:`UserSpec.scripted_reply`),
``open`` and ``answer`` hold a conversation (:meth:`UserSpec.conversation_reply`).
``simulator: model`` without a user model (``--user-model``) falls back to it, so such
a task stays playable offline.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import TaskInstance, UserSpec

from .base import Exchange, UserSimulator, Utterance, user_simulator


class ScriptedUser:
    """The deterministic user: answers by the keyword rules of the task's ``user`` section."""

    name = "scripted"

    def __init__(self, spec: UserSpec) -> None:
        self.spec = spec

    def reply(self, question: str, transcript: Sequence[Exchange]) -> str:
        """Apply :meth:`UserSpec.scripted_reply`; the transcript counts earlier questions."""
        text, _ = self.spec.scripted_reply(question, asked_before=len(transcript))
        return text

    def open(self, request: str) -> str:
        """A conversation's first message: the task's description, as written."""
        return request

    def answer(self, request: str, history: Sequence[Utterance]) -> str:
        """Apply :meth:`UserSpec.conversation_reply` to the agent's last message."""
        said = sum(u.speaker == "user" for u in history) - 1  # the opening is not an answer
        text, _ = self.spec.conversation_reply(history[-1].text, asked_before=max(said, 0))
        return text


@user_simulator("scripted")
def _build_scripted(spec: UserSpec, instance: TaskInstance | None) -> UserSimulator:
    return ScriptedUser(spec)


@user_simulator("model")
def _build_model_fallback(spec: UserSpec, instance: TaskInstance | None) -> UserSimulator:
    """``simulator: model`` without ``--user-model``: the scripted user stands in."""
    return ScriptedUser(spec)
