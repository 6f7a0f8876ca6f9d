"""No credit without looking: the tools a task's reference solution calls.

"It does not exist", "the service refused", "done" are claims; on a task whose reference
reads the world first, a claim made without reading is a guess. ``toolproof check-task``
runs a blind agent (``noop`` answering such a claim, no tool call) and requires ``fail``
on every task (:func:`toolproof.engine.quality.judge_blind`); a task passes that rule by
making its credit depend on the reference's read (a check named ``looked``, required by
its ``partial`` level). Every built-in task has a reference read
(:func:`reference_tools`), so the rule reaches all of them.
"""

from __future__ import annotations

from toolproof.spec import ANSWER_TOOL, Task

__all__ = ["reference_tools"]


def reference_tools(task: Task) -> set[str]:
    """The tools the reference solution calls (every turn), the typed answer aside."""
    items = [*task.solution.calls, *(c for turn in task.solution.turns for c in turn.calls)]
    names = set()
    for item in items:
        for call in item if isinstance(item, list) else [item]:
            names.add(call.tool)
    names.discard(ANSWER_TOOL)
    return names
