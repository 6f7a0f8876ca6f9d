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

import importlib
import warnings
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


#: Names this module had before the user moved to its own layer (issue 35), for plug-ins
#: written against the old path. Resolved on access, by name, with a DeprecationWarning:
#: the tools layer imports nothing above it at import time.
_MOVED = frozenset({"user_simulator", "user_simulators", "ModelUser", "ScriptedUser"})


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(
            f"toolproof.tools.toolkits.user.{name} moved to toolproof.users.{name}; "
            "import it from there (the old path will be removed)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module("toolproof.users"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
