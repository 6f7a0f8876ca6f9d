"""Score one finished episode: run every check on the harness side, then grade."""

from __future__ import annotations

from toolproof.trajectory import Termination

from .base import CheckResult, Level, Score, ScoringContext, evaluators
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
    calls = len(ctx.trajectory.tool_calls())
    level, fraction = grade(ctx.instance, results, termination, calls, len(ctx.trajectory.steps))
    if termination is Termination.INFRA_ERROR:
        level = Level.FAIL
    return Score(
        passed=level in (Level.PERFECT, Level.ACCEPTABLE),
        level=level,
        fraction=fraction,
        checks=results,
        termination=termination,
        tool_calls=calls,
    )
