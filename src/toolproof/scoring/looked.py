"""No credit without looking: an episode that never called a tool the reference calls
earns nothing.

"It does not exist", "the service refused", "done" are claims; on a task whose
reference solution reads the world first, a claim made without reading is a guess,
whatever checks it happens to satisfy (an unchanged state, a negative phrase). So when
the reference makes tool calls, at least one call of the episode must be to a tool the
reference calls and must reach it (any result, an error result included: reading a
missing ticket is looking; a call refused for its arguments, an unknown tool or a policy
is not). Otherwise the episode fails by a veto, like collateral damage. The rule goes
with the reference's play (see :func:`looked_check`).
"""

from __future__ import annotations

from toolproof.spec import ANSWER_TOOL, Task

from .base import CheckResult, ScoringContext

__all__ = ["LOOKED_CHECK", "looked_check", "reference_tools"]

LOOKED_CHECK = "looked"
"""The name of the result the rule adds when it vetoes."""

_NOT_REACHED = frozenset({"unknown_tool", "invalid_arguments", "policy_violation"})
"""Error kinds of a call that never reached the tool."""


def reference_tools(task: Task) -> set[str]:
    """The tools the reference solution calls (every turn), the typed answer aside."""
    items = [*task.solution.calls, *(c for turn in task.solution.turns for c in turn.calls)]
    names = set()
    for item in items:
        for call in item if isinstance(item, list) else [item]:
            names.add(call.tool)
    names.discard(ANSWER_TOOL)
    return names


def looked_check(ctx: ScoringContext) -> CheckResult | None:
    """A vetoing guard result when the episode never called a tool the reference calls.

    It applies where the reference was played for this episode (``ctx.reference``: every
    task the engine scores, software tasks judged by hidden tests aside, whose checks
    need the work done anyway); a context built without one is left alone.
    """
    tools = reference_tools(ctx.instance.task)
    if not tools or ctx.reference is None:
        return None
    for call, outcome in ctx.trajectory.tool_calls():
        if call.name not in tools or outcome is None:
            continue
        if not outcome.is_error or outcome.error_kind not in _NOT_REACHED:
            return None
    return CheckResult(
        name=LOOKED_CHECK,
        kind="process",
        passed=False,
        score=0.0,
        weight=0.0,
        detail=(
            "no credit without looking: the episode never called a tool the reference "
            f"calls ({', '.join(sorted(tools))})"
        ),
        veto=True,
        guard=True,
    )
