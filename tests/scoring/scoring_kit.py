"""Build a finished episode by hand and score it: the scoring tests' one helper."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolproof.scoring import CheckResult, Score, ScoringContext, evaluators, score_episode
from toolproof.spec import Limits, Task, render
from toolproof.trajectory import Message, Step, Termination, ToolCall, ToolResult, Trajectory
from toolproof.worlds import World
from toolproof_helpers import make_task

Call = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], bool]
"""(tool, arguments) or (tool, arguments, failed)."""


def episode(
    checks: list[dict[str, Any]],
    *,
    answer: str | None = "",
    calls: list[Call] | None = None,
    mutate: Callable[[World], None] | None = None,
    termination: Termination = Termination.COMPLETED,
    say: list[str] | None = None,
    **task: Any,
) -> ScoringContext:
    """A scoring context: the task (``make_task`` with these checks), the calls made (one per
    step), assistant text ``say`` before them, and the world changed by ``mutate``."""
    spec = Task.model_validate(make_task(success=checks, **task))
    instance = render(spec, suite="mini", suite_seed=1, epoch=0, limits=Limits(), system_prompt="s")
    world = World(instance.task.world)
    initial = world.snapshot()
    if mutate is not None:
        mutate(world)
    steps = [
        Step(index=n, message=Message(role="assistant", content=text))
        for n, text in enumerate(say or [])
    ]
    for item in calls or []:
        name, arguments = item[0], item[1]
        failed = len(item) > 2 and bool(item[2])  # type: ignore[misc]
        call = ToolCall(id=f"c{len(steps)}", name=name, arguments=arguments)
        result = ToolResult(
            call_id=call.id, name=name, content="error" if failed else "ok", is_error=failed
        )
        steps.append(
            Step(
                index=len(steps),
                message=Message(role="assistant", tool_calls=[call]),
                results=[result],
            )
        )
    if answer is not None:
        steps.append(Step(index=len(steps), message=Message(role="assistant", content=answer)))
    trajectory = Trajectory(
        episode_id="stock#0",
        task_id="stock",
        epoch=0,
        seed=instance.seed,
        agent="test",
        prompt=[],
        steps=steps,
        final_answer=answer,
        termination=termination,
    )
    return ScoringContext(
        instance=instance,
        trajectory=trajectory,
        initial=initial,
        final=world.snapshot(),
        world=world,
    )


def check(spec: dict[str, Any], **kwargs: Any) -> CheckResult:
    """Evaluate one check in an episode made by :func:`episode`."""
    ctx = episode([spec], **kwargs)
    check_spec = ctx.instance.task.success[0]
    try:
        return evaluators()[check_spec.kind](check_spec, ctx, 0)
    finally:
        ctx.world.close()


def score(checks: list[dict[str, Any]], **kwargs: Any) -> Score:
    """Score a whole episode made by :func:`episode`."""
    ctx = episode(checks, **kwargs)
    try:
        return score_episode(ctx)
    finally:
        ctx.world.close()
