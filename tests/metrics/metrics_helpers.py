"""Hand-made episode records for metric tests, and a helper that runs the core suite."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolproof.results import EpisodeRecord, TaskFacts
from toolproof.scoring import CheckResult, Level, Score
from toolproof.trajectory import (
    Message,
    StateDiff,
    Step,
    Termination,
    ToolCall,
    ToolResult,
    Trajectory,
    Usage,
)

_ids = itertools.count()

Call = tuple[ToolCall, ToolResult]


def call(
    name: str,
    args: dict[str, Any] | None = None,
    *,
    result: Any = "ok",
    error_kind: str | None = None,
    duration_s: float = 0.0,
) -> Call:
    """A tool call and its result; ``error_kind`` makes the result an error."""
    call_id = f"c{next(_ids)}"
    content = result if isinstance(result, str) else json.dumps(result)
    return (
        ToolCall(id=call_id, name=name, arguments=dict(args or {})),
        ToolResult(
            call_id=call_id,
            name=name,
            content=content,
            is_error=error_kind is not None,
            error_kind=error_kind,
            duration_s=duration_s,
        ),
    )


def step(
    index: int,
    calls: Sequence[Call] = (),
    *,
    content: str | None = None,
    agent_s: float = 0.0,
    tool_s: float = 0.0,
    digest: str = "s0",
    changed: Sequence[str] = (),
    usage: Usage | None = None,
) -> Step:
    """A step; ``changed`` lists record paths the step changed (a non-empty diff)."""
    diff = StateDiff(records={p: [0, 1] for p in changed}) if changed else None
    return Step(
        index=index,
        message=Message(role="assistant", content=content, tool_calls=[c for c, _ in calls]),
        results=[r for _, r in calls],
        agent_s=agent_s,
        tool_s=tool_s,
        state_digest=digest,
        diff=diff,
        usage=usage,
    )


def check(
    kind: str = "output",
    passed: bool = True,
    *,
    name: str | None = None,
    veto: bool = False,
    detail: str = "",
    data: dict[str, Any] | None = None,
) -> CheckResult:
    """A check result."""
    return CheckResult(
        name=name or kind,
        kind=kind,
        passed=passed,
        score=1.0 if passed else 0.0,
        veto=veto,
        detail=detail,
        data=data or {},
    )


def record(
    task: str = "t1",
    epoch: int = 0,
    *,
    passed: bool = True,
    level: str | None = None,
    passed_loose: bool | None = None,
    steps: Sequence[Step] = (),
    answer: str | None = "done",
    termination: str = "completed",
    checks: Sequence[CheckResult] = (),
    reference_calls: int = 1,
    reference_tools: Sequence[str] = ("get",),
    category: str = "normal",
    type_: str = "single_tool",
    difficulty: int = 1,
    domain: str = "shop",
    tags: Sequence[str] = (),
    judged: bool = False,
    failure_mode: str | None = None,
    failure_step: int | None = None,
    attempts: int = 1,
    duration_s: float = 0.0,
    fraction: float | None = None,
    prompt: str = "Do the task.",
) -> EpisodeRecord:
    """An episode record with the given facts (defaults: a passed, perfect episode)."""
    chosen = Level(level) if level is not None else (Level.PERFECT if passed else Level.FAIL)
    end = Termination(termination)
    trajectory = Trajectory(
        episode_id=f"{task}#{epoch}",
        task_id=task,
        epoch=epoch,
        seed=0,
        agent="test",
        prompt=[Message(role="user", content=prompt)],
        steps=list(steps),
        final_answer=answer,
        termination=end,
        duration_s=duration_s,
    )
    score = Score(
        passed=passed,
        level=chosen,
        fraction=fraction if fraction is not None else (1.0 if passed else 0.0),
        checks=list(checks),
        termination=end,
        tool_calls=len(trajectory.tool_calls()),
        failure_mode=failure_mode,
        failure_step=failure_step,
        judged=judged,
        passed_loose=passed_loose,
    )
    facts = TaskFacts(
        id=task,
        type=type_,
        category=category,
        difficulty=difficulty,
        domain=domain,
        tags=list(tags),
        reference_calls=reference_calls,
        tools=["get", "put", "list"],
        reference_tools=list(reference_tools),
        judged=judged,
    )
    return EpisodeRecord(
        key=f"{task}#{epoch}",
        task=facts,
        epoch=epoch,
        seed=0,
        agent="test",
        attempts=attempts,
        score=score,
        trajectory=trajectory,
    )


def run_core(
    out: Path,
    agent: str,
    *,
    epochs: int = 1,
    seed: int | None = None,
    tasks: Sequence[str] = (),
    system_prompt: str | None = None,
) -> Path:
    """Run the built-in core suite (no snapshots) into ``out`` and return it."""
    from toolproof.engine import RunConfig, Runner
    from toolproof.spec import resolve_suite_path

    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent=agent,
        epochs=epochs,
        seed=seed,
        tasks=list(tasks),
        system_prompt=system_prompt,
        snapshots=False,
    )
    asyncio.run(Runner(config, out, parallel=4).run())
    return out
