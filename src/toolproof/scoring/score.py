"""Score one finished episode: run every check on the harness side, then grade."""

from __future__ import annotations

from toolproof.spec import ANSWER_TOOL
from toolproof.trajectory import Termination

from .base import Level, Score, ScoringContext, run_check
from .collateral import collateral_check
from .failure import classify_failure
from .levels import grade


def score_episode(ctx: ScoringContext) -> Score:
    """Run the task's checks on the final state and trajectory and grade the episode.

    A check that crashes fails with the error as its detail; it never aborts scoring.
    A broken custom check (``CheckResult.task_error``) makes the whole score a task
    error: level fail, not passed, ``task_error`` set, no failure mode blamed on the
    agent; metrics keep such episodes out of every denominator.

    ``passed`` is strict: a task with a typed answer passes only with the right value
    handed in with ``submit_answer``. ``passed_loose`` grades the episode again with
    the free-text answer read by the loose rule (the answer check's ``data["loose"]``),
    so ``passed`` implies ``passed_loose``.
    """
    results = [run_check(spec, ctx, index) for index, spec in enumerate(ctx.instance.task.success)]
    damage = collateral_check(ctx)  # a change the reference does not make: a veto
    if damage is not None:
        results.append(damage)
    termination = ctx.trajectory.termination
    if any(r.data.get("infra_error") for r in results if r.kind in ("judge", "hidden_tests")):
        termination = Termination.INFRA_ERROR  # the judge or the sandbox failed, not the agent
    # Handing in the typed answer is not work: it counts toward no call budget.
    calls = sum(1 for c, _ in ctx.trajectory.tool_calls() if c.name != ANSWER_TOOL)
    steps = len(ctx.trajectory.steps)
    level, fraction = grade(ctx.instance, results, termination, calls, steps)
    task_error = any(r.task_error for r in results)
    if termination is Termination.INFRA_ERROR or task_error:
        level = Level.FAIL
    passed = level in (Level.PERFECT, Level.ACCEPTABLE)
    passed_loose = passed
    loose = [
        r.model_copy(update={"passed": True, "score": 1.0})
        if r.kind == "answer" and not r.passed and r.data.get("loose") is True
        else r
        for r in results
    ]
    if not passed and loose != results and termination is not Termination.INFRA_ERROR:
        loose_level, _ = grade(ctx.instance, loose, termination, calls, steps)
        passed_loose = not task_error and loose_level in (Level.PERFECT, Level.ACCEPTABLE)
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
        passed_loose=passed_loose,
        task_error=task_error,
    )
