"""The turn protocol's names, and pure helpers that read it (the loop writes it).

A task's ``user_turns`` are sent one by one, each when the agent replies without a
tool call; a task whose user is in conversation (``user.mode: conversation``, as in
tau2-bench) opens with the user's first message instead of the description, and each
reply of the agent without a tool call goes to the user, whose answer is the next user
message. What the user says comes from ``toolproof.users.EpisodeUser``; the episode loop
(:func:`~toolproof.engine.episode.run_episode`) is the only place that writes the turns
into the trajectory, with these annotations:

Every step of such an episode carries the :data:`USER_TURN` annotation, and the step
that ends a turn :data:`NEXT_USER_TURN` (the next user message is in its
``observations``), so that a replay, a scorer or the viewer can split the steps per
turn. In a conversation, a step whose observations hold a user message names who
wrote it (:data:`USER_BY`), the first step who opened (:data:`OPENED_BY`), and the
last step why it ended (:data:`CONVERSATION_END`; the user's closing words, if any,
are its observations). The answer scored is the agent's last reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import Problem, SpecError, TaskInstance
from toolproof.trajectory import Step

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


def current_user_turn(steps: Sequence[Step]) -> int:
    """The user turn the next step belongs to, after ``steps``."""
    if not steps:
        return 0
    notes = steps[-1].annotations
    return int(notes.get(NEXT_USER_TURN, notes.get(USER_TURN, 0)))


def conversation_turns(steps: Sequence[Step]) -> list[tuple[str, str]]:
    """The (agent's reply, user's next message) pairs recorded in ``steps`` (for a replay)."""
    return [
        (step.message.content or "", step.observations[0].content or "")
        for step in steps
        if NEXT_USER_TURN in step.annotations and step.observations
    ]


def in_conversation(instance: TaskInstance) -> bool:
    """Whether the task's user is in conversation (``user.mode: conversation``)."""
    user = instance.task.user
    return user is not None and user.mode == "conversation"


def refuse_driven(instance: TaskInstance, agent_label: str) -> None:
    """Stop the run when an agent that owns its loop meets a task with further user turns.

    Such an agent returns one final answer and cannot be sent a follow-up user message;
    running it anyway would score the first turn alone.

    Raises:
        SpecError: the task has user turns, or a user in conversation.
    """
    turns = len(instance.task.user_turns)
    if turns or in_conversation(instance):
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
