"""Further user turns of an episode: where the next step belongs, and who cannot take them.

A task's ``user_turns`` are sent one by one, each when the agent replies without a
tool call (see ``_loop`` in :mod:`.episode`). Every step of such an episode carries
the :data:`USER_TURN` annotation, and the step that ends a turn :data:`NEXT_USER_TURN`
(the next user message is in its ``observations``), so that a replay, a scorer or the
viewer can split the steps per turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import Problem, SpecError, TaskInstance
from toolproof.trajectory import Step

USER_TURN = "user_turn"
"""Step annotation: the index of the user turn the step belongs to (0: the first prompt)."""
NEXT_USER_TURN = "next_user_turn"
"""Step annotation on a turn's last step: the user turn its observations start."""


def current_user_turn(steps: Sequence[Step]) -> int:
    """The user turn the next step belongs to, after ``steps``."""
    if not steps:
        return 0
    notes = steps[-1].annotations
    return int(notes.get(NEXT_USER_TURN, notes.get(USER_TURN, 0)))


def refuse_driven(instance: TaskInstance, agent_label: str) -> None:
    """Stop the run when an agent that owns its loop meets a task with further user turns.

    Such an agent returns one final answer and cannot be sent a follow-up user message;
    running it anyway would score the first turn alone.

    Raises:
        SpecError: the task has user turns.
    """
    turns = len(instance.task.user_turns)
    if turns:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"task {instance.task.id} has {turns + 1} user turns; agent "
                    f"{agent_label!r} owns its loop (run()) and cannot take a follow-up user "
                    "message: use a harness-driven agent (oracle, openai, anthropic, http, or "
                    "a python: agent with act())",
                )
            ]
        )
