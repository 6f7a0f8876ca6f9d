"""Score one finished episode: run every check on the harness side, then grade."""

from __future__ import annotations

from toolproof.trajectory import Termination

from .base import CheckResult, Level, Score, ScoringContext, evaluators
from .failure import classify_failure
from .levels import grade


def score_episode(ctx: ScoringContext) -> Score:
    """Run the task's checks on the final state and trajectory and grade the episode.

    A check that crashes fails with the error as its detail; it never aborts scoring.
    """
    registry = evaluators()
    results: list[CheckResult] = []
    for index, spec in enumerate(ctx.instance.task.success):
        evaluator = registry.get(spec.kind)
        name = spec.name or f"{spec.kind}_{index}"
        if evaluator is None:
            results.append(
                CheckResult(
                    name=name, kind=spec.kind, passed=False, score=0.0, detail="no evaluator"
                )
            )
            continue
        try:
            results.append(evaluator(spec, ctx, index))
        except Exception as exc:
            results.append(
                CheckResult(
                    name=name,
                    kind=spec.kind,
                    passed=False,
                    score=0.0,
                    weight=spec.weight,
                    detail=f"check crashed: {type(exc).__name__}: {exc}",
                )
            )
    termination = ctx.trajectory.termination
    if any(r.data.get("infra_error") for r in results if r.kind == "judge"):
        termination = Termination.INFRA_ERROR  # the judge failed, not the agent
    calls = len(ctx.trajectory.tool_calls())
    level, fraction = grade(ctx.instance, results, termination, calls, len(ctx.trajectory.steps))
    if termination is Termination.INFRA_ERROR:
        level = Level.FAIL
    passed = level in (Level.PERFECT, Level.ACCEPTABLE)
    failure = classify_failure(
        ctx.instance, ctx.trajectory, results, passed=passed, termination=termination
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
    )
