"""``ask_user``: the agent's only way to reach the simulated user of a task.

The task's ``user:`` section (:class:`~toolproof.spec.UserSpec`) says what the user
knows; a *user simulator* answers each question (the built-in ``scripted`` one by
keyword rules, ``model`` played by the run's ``--user-model``, or one registered with
``toolproof.users.user_simulator``). The user lives in its own layer,
``toolproof.users``: the engine hands each episode's user to the tool as
``ToolContext.user``, and this tool only asks it. Every reply names the simulator that
gave it (``answered_by``), so the trajectory records who played the user; the
episode's questions and replies are its transcript (``EpisodeUser.transcript``).

A user in conversation (``user.mode: conversation``) is the same object, talking
through the engine instead of this tool.
"""

from __future__ import annotations

from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool
from ..context import NO_USER


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
    if ctx.user is None:
        raise ToolError(NO_USER)
    reply, answered_by = await ctx.user.ask(question)
    return {"reply": reply, "answered_by": answered_by}
