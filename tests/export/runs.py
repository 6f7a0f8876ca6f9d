"""Run folders for the export tests, written through ``toolproof.results.RunStore``.

``varied_run`` holds one episode of each kind an export must tell apart: passed with
model calls and tool calls (one of them an error), failed with failing checks and text
XML cannot hold, an infra error, a broken task check, an agent that owns its loop (its
model calls recorded by the gateway), and an agent_error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolproof.results import EpisodeRecord, RunStore, TaskFacts
from toolproof.scoring import CheckResult, Level, Score
from toolproof.trajectory import (
    Message,
    Step,
    Termination,
    ToolCall,
    ToolResult,
    Trajectory,
    Usage,
)

META: dict[str, Any] = {
    "config": {"agent": "openai:gpt-4o-mini", "epochs": 2, "model": None},
    "suite": {"name": "demo", "version": "1.2.0", "digest": "d" * 64, "seed": 7},
}


def record(
    task_id: str,
    epoch: int = 0,
    *,
    passed: bool = True,
    termination: Termination = Termination.COMPLETED,
    checks: list[CheckResult] | None = None,
    steps: list[Step] | None = None,
    answer: str | None = "done",
    task_error: bool = False,
    error: str | None = None,
    failure_mode: str | None = None,
    category: str = "normal",
) -> EpisodeRecord:
    """One stored episode."""
    steps = steps if steps is not None else []
    key = f"{task_id}#{epoch}"
    trajectory = Trajectory(
        episode_id=key,
        task_id=task_id,
        epoch=epoch,
        seed=100 + epoch,
        agent="openai:gpt-4o-mini",
        prompt=[
            Message(role="system", content="You are careful."),
            Message(role="user", content=f"Do {task_id}."),
        ],
        steps=steps,
        final_answer=answer,
        termination=termination,
        error=error,
        started_at="2026-12-01T10:00:00+00:00",
        duration_s=1.5,
    )
    checks = (
        checks
        if checks is not None
        else [CheckResult(name="ok", kind="state", passed=passed, score=float(passed))]
    )
    score = Score(
        passed=passed,
        level=Level.PERFECT if passed else Level.FAIL,
        fraction=1.0 if passed else 0.25,
        checks=checks,
        termination=termination,
        tool_calls=sum(len(s.message.tool_calls) for s in steps),
        failure_mode=failure_mode,
        task_error=task_error,
    )
    return EpisodeRecord(
        key=key,
        task=TaskFacts(
            id=task_id,
            type="multi_step",
            category=category,
            difficulty=2,
            domain="shop",
            tags=["t1"],
        ),
        epoch=epoch,
        seed=100 + epoch,
        agent="openai:gpt-4o-mini",
        attempts=3 if termination == Termination.INFRA_ERROR else 1,
        infra_errors=["HTTP 503"] * 2 if termination == Termination.INFRA_ERROR else [],
        score=score,
        trajectory=trajectory,
    )


def tool_steps() -> list[Step]:
    """Two model turns: two tool calls (one failing), then the answer."""
    calls = [
        ToolCall(id="c1", name="lookup", arguments={"sku": "A1"}),
        ToolCall(id="c2", name="update", arguments={"sku": "A1", "qty": 3}),
    ]
    return [
        Step(
            index=0,
            message=Message(role="assistant", content=None, tool_calls=calls),
            results=[
                ToolResult(call_id="c1", name="lookup", content='{"qty": 1}', duration_s=0.1),
                ToolResult(
                    call_id="c2",
                    name="update",
                    content="qty must be below 3",
                    is_error=True,
                    error_kind="tool_error",
                    duration_s=0.05,
                ),
            ],
            usage=Usage(input_tokens=120, output_tokens=30, cost_usd=0.0012),
            agent_s=0.4,
            tool_s=0.15,
        ),
        Step(
            index=1,
            message=Message(role="assistant", content="done"),
            usage=Usage(input_tokens=160, output_tokens=5, cost_usd=0.0009),
            agent_s=0.3,
        ),
    ]


def driven_steps() -> list[Step]:
    """An agent that owns its loop: one tool call, two model calls seen by the gateway."""
    call = {
        "api": "openai",
        "model": "gpt-4o-mini",
        "status": 200,
        "latency_s": 0.2,
        "cached": False,
        "usage": {"input_tokens": 50, "output_tokens": 7, "estimated": False, "cost_usd": 0.0001},
    }
    return [
        Step(
            index=0,
            message=Message(
                role="assistant", tool_calls=[ToolCall(id="d1", name="lookup", arguments={})]
            ),
            results=[ToolResult(call_id="d1", name="lookup", content="{}", duration_s=0.01)],
            usage=Usage(input_tokens=100, output_tokens=14, cost_usd=0.0002),
            annotations={"model_calls": [call, {**call, "cached": True}]},
            agent_s=0.4,
            tool_s=0.01,
        )
    ]


HOSTILE = 'bad \x00\x01\x1b[31m <tag> & "quotes" \ufffe end'


def varied_records() -> list[EpisodeRecord]:
    """One episode of each kind (see the module's docstring)."""
    failing = [
        CheckResult(name="stock_updated", kind="state", passed=False, score=0.0, detail=HOSTILE),
        CheckResult(name="said_sku", kind="output", passed=True, score=1.0),
    ]
    return [
        record("alpha", 0, steps=tool_steps()),
        record(
            "alpha", 1, passed=False, checks=failing, answer=HOSTILE, failure_mode="wrong_value"
        ),
        record(
            "beta",
            0,
            passed=False,
            termination=Termination.INFRA_ERROR,
            error="provider outage: HTTP 503",
            answer=None,
        ),
        record(
            "gamma",
            0,
            passed=False,
            task_error=True,
            checks=[
                CheckResult(
                    name="custom_check",
                    kind="custom",
                    passed=False,
                    score=0.0,
                    task_error=True,
                    detail="ImportError: no module named hard",
                )
            ],
        ),
        record("delta", 0, steps=driven_steps(), category="tool_error"),
        record(
            "eps",
            0,
            passed=False,
            termination=Termination.AGENT_ERROR,
            error="the reply is not JSON",
            failure_mode="agent_error",
            answer=None,
        ),
    ]


def write_run(
    run_dir: Path, records: list[EpisodeRecord], meta: dict[str, Any] | None = None
) -> Path:
    """A finalized run folder holding ``records``."""
    store = RunStore(run_dir, commit_every=1000)
    try:
        store.set_meta(meta if meta is not None else META)
        for item in records:
            store.append(item)
        store.finalize({})
    finally:
        store.close()
    return run_dir
