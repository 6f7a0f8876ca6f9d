"""Score one finished episode: run every check on the harness side, then grade."""

from __future__ import annotations

from toolproof.trajectory import Termination

from .base import Level, Score, ScoringContext, run_check
from .failure import classify_failure
from .levels import grade


def score_episode(ctx: ScoringContext) -> Score:
    """Run the task's checks on the final state and trajectory and grade the episode.

    A check that crashes fails with the error as its detail; it never aborts scoring.
    A broken custom check (``CheckResult.task_error``) makes the whole score a task
    error: level fail, not passed, ``task_error`` set, no failure mode blamed on the
    agent; metrics keep such episodes out of every denominator.
    """
    results = [run_check(spec, ctx, index) for index, spec in enumerate(ctx.instance.task.success)]
    termination = ctx.trajectory.termination
    if any(r.data.get("infra_error") for r in results if r.kind in ("judge", "hidden_tests")):
        termination = Termination.INFRA_ERROR  # the judge or the sandbox failed, not the agent
    calls = len(ctx.trajectory.tool_calls())
    level, fraction = grade(ctx.instance, results, termination, calls, len(ctx.trajectory.steps))
    if termination is Termination.INFRA_ERROR:
        level = Level.FAIL
    task_error = any(r.task_error for r in results)
    if task_error:
        level = Level.FAIL
    passed = level in (Level.PERFECT, Level.ACCEPTABLE)
    failure = (
        None
        if task_error
        else classify_failure(
            ctx.instance, ctx.trajectory, results, passed=passed, termination=termination
        )
    )
    return Score(
        passed=passed,
        level=level,
        fraction=fraction,
        checks=results,
        termination=termination,
        tool_calls=calls,
        failure_mode=None if failure is None else failure.mode.value,
        failure_step=None if failure is None else failure.step,
        judged=any(r.kind == "judge" for r in results),
        task_error=task_error,
    )
