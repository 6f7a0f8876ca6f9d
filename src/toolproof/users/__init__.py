"""The simulated user: a peer of the agent (as tau2-bench's ``src/tau2/user``), not a tool.

A task's ``user:`` section (:class:`~toolproof.spec.UserSpec`) says what the user knows;
a *user simulator* plays that user. The engine makes one :class:`EpisodeUser` per
episode and talks to the user only through it; the ``ask_user`` tool reaches the same
object through ``ToolContext.user`` (a ``UserLink``, declared by the tools layer)::

    base.py       UserSimulator (one required method, ``reply``), Conversing (``open``,
                  ``answer``), Exchange, Utterance, UserModelError, @user_simulator registry
    scripted.py   ScriptedUser: the task's keyword rules (registered as ``scripted``, and as
                  the offline stand-in for ``model``)
    model.py      ModelUser: a model through the model gateway (``--user-model``), and its
                  prompts (``user_model_prompt``, ``conversation_prompt``, ``GREETING``)
    episode.py    EpisodeUser: ask (the ask_user face), open/after (conversation and the
                  task's ``user_turns``), resume (replay of a recorded transcript)

Layer: beside ``agents`` and ``scoring``; it imports ``tools``, ``trajectory`` and
``spec``, never the engine.
"""

from .base import (
    Conversing,
    Exchange,
    SimulatorBuilder,
    UserModelError,
    UserSimulator,
    Utterance,
    user_simulator,
    user_simulators,
)
from .episode import EndReason, EpisodeUser, FollowUp, Opening, asked_in
from .model import (
    GREETING,
    MAX_HISTORY,
    MAX_QUESTION_CHARS,
    MAX_REPLY_CHARS,
    ModelUser,
    conversation_prompt,
    user_model_prompt,
)
from .scripted import ScriptedUser  # registers "scripted" and the offline "model"

__all__ = [
    "GREETING",
    "MAX_HISTORY",
    "MAX_QUESTION_CHARS",
    "MAX_REPLY_CHARS",
    "Conversing",
    "EndReason",
    "EpisodeUser",
    "Exchange",
    "FollowUp",
    "ModelUser",
    "Opening",
    "ScriptedUser",
    "SimulatorBuilder",
    "UserModelError",
    "UserSimulator",
    "Utterance",
    "asked_in",
    "conversation_prompt",
    "user_model_prompt",
    "user_simulator",
    "user_simulators",
]
