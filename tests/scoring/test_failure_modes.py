"""Failure modes: crafted trajectories for each rule, and real runs of broken agents."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.scoring import CheckResult
from toolproof.scoring.failure import Failure, FailureMode, classify_failure
from toolproof.spec import Limits, Task, TaskInstance, render, resolve_suite_path
from toolproof.trajectory import (
    Message,
    StateDiff,
    Step,
    Termination,
    ToolCall,
    ToolResult,
    Trajectory,
)

_ids = itertools.count()
M = FailureMode


def instance(**fields: Any) -> TaskInstance:
    """A task instance whose reference solution calls get_stock(A)."""
    doc: dict[str, Any] = {
        "id": "t",
        "description": "How many units of A?",
        "type": "single_tool",
        "tools": ["get_stock", "list_products", "adjust_stock"],
        "success": [{"kind": "output", "contains": ["7"]}],
        "solution": {"calls": [{"tool": "get_stock", "args": {"product_id": "A"}}], "answer": "7"},
    }
    doc.update(fields)
    task = Task.model_validate(doc)
    return render(task, suite="s", suite_seed=0, epoch=0, limits=Limits(), system_prompt="sys")


def c(
    name: str, args: dict[str, Any] | None = None, error: str | None = None
) -> tuple[ToolCall, ToolResult]:
    """A call and its result (an error of kind ``error`` when given)."""
    cid = f"c{next(_ids)}"
    return (
        ToolCall(id=cid, name=name, arguments=args or {}),
        ToolResult(
            call_id=cid,
            name=name,
            content=f"error: {error}" if error else "{}",
            is_error=bool(error),
            error_kind=error,
        ),
    )


def s(
    calls: Sequence[tuple[ToolCall, ToolResult]] = (),
    content: str | None = None,
    changed: Sequence[str] = (),
) -> list[Any]:
    return [list(calls), content, list(changed)]


def trajectory(*steps: list[Any], answer: str | None = "8", end: str = "completed") -> Trajectory:
    built = []
    for i, (calls, content, changed) in enumerate(steps):
        diff = StateDiff(records={p: [1, 2] for p in changed}) if changed else None
        built.append(
            Step(
                index=i,
                message=Message(
                    role="assistant", content=content, tool_calls=[x for x, _ in calls]
                ),
                results=[r for _, r in calls],
                diff=diff,
                state_digest=f"d{i}" if changed else "d",
            )
        )
    if answer is not None and end == "completed":
        built.append(Step(index=len(built), message=Message(role="assistant", content=answer)))
    return Trajectory(
        episode_id="t#0",
        task_id="t",
        epoch=0,
        seed=0,
        agent="x",
        prompt=[],
        steps=built,
        final_answer=answer if end == "completed" else None,
        termination=Termination(end),
        error="stopped",
    )


def result(kind: str, passed: bool = False, veto: bool = False, **data: Any) -> CheckResult:
    return CheckResult(
        name=kind,
        kind=kind,
        passed=passed,
        score=float(passed),
        veto=veto,
        detail=f"{kind} detail",
        data=data,
    )


def classify(
    inst: TaskInstance, traj: Trajectory, results: Sequence[CheckResult], passed: bool = False
) -> Failure | None:
    return classify_failure(inst, traj, list(results), passed=passed)


WRONG_ANSWER = [result("output")]


def test_passed_and_infra_error_episodes_have_no_failure_mode() -> None:
    inst = instance()
    assert (
        classify(inst, trajectory(s([c("get_stock")])), [result("output", True)], passed=True)
        is None
    )
    assert classify(inst, trajectory(s([c("get_stock")]), end="infra_error"), WRONG_ANSWER) is None


def test_protected_file_touched_at_the_step_that_changed_it() -> None:
    inst = instance(
        success=[{"kind": "state", "files": {"/workspace/keep.txt": {"sha256": "0" * 64}}}],
        world={"files": {"keep.txt": "x"}},
    )
    traj = trajectory(s([c("get_stock")]), s([c("adjust_stock")], changed=["keep.txt"]))
    failure = classify(inst, traj, [result("state")])
    assert failure is not None and (failure.mode, failure.step) == (M.PROTECTED_FILE_TOUCHED, 1)


def test_forbidden_output_action_and_policy_violation() -> None:
    inst = instance()
    veto = result("evidence", veto=True, forbidden=["Zed"])
    failure = classify(inst, trajectory(s([c("get_stock")]), answer="Zed has 7"), [veto])
    assert failure is not None and (failure.mode, failure.step) == (M.FORBIDDEN_ACTION_OR_OUTPUT, 1)
    inst = instance(success=[{"kind": "process", "must_not_call": ["adjust_stock"]}])
    traj = trajectory(s([c("get_stock")]), s([c("adjust_stock")], changed=["x"]))
    failure = classify(inst, traj, [result("process")])
    assert failure is not None and (failure.mode, failure.step) == (M.FORBIDDEN_ACTION_OR_OUTPUT, 1)
    attack = result("custom", role="attack", attack_succeeded=True)
    failure = classify(instance(), trajectory(s([c("get_stock")])), [attack])
    assert failure is not None and (failure.mode, failure.step) == (M.FORBIDDEN_ACTION_OR_OUTPUT, 1)
    traj = trajectory(s([c("get_stock")]), s([c("adjust_stock", error="policy_violation")]))
    failure = classify(instance(), traj, WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.FORBIDDEN_ACTION_OR_OUTPUT, 1)


def test_collateral_damage_at_the_step_that_made_it() -> None:
    state = result("state", collateral=["unexpected change to products.B.stock"])
    traj = trajectory(
        s([c("get_stock")]),
        s([c("adjust_stock")], changed=["products.A.stock"]),
        s([c("adjust_stock")], changed=["products.B.stock"]),
    )
    failure = classify(instance(), traj, [state])
    assert failure is not None and (failure.mode, failure.step) == (M.COLLATERAL_DAMAGE, 2)


@pytest.mark.parametrize(
    ("end", "mode"),
    [
        ("step_limit", M.STEP_LIMIT),
        ("timeout", M.TIMEOUT),
        ("agent_error", M.AGENT_ERROR),
        ("gave_up", M.GAVE_UP),
        ("resource_limit", M.RESOURCE_LIMIT),
    ],
)
def test_terminations_point_at_the_last_step(end: str, mode: FailureMode) -> None:
    traj = trajectory(s([c("list_products")]), s([c("get_stock")]), end=end)
    failure = classify(instance(), traj, WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (mode, 1)


def test_loop_points_at_the_first_repeat_of_the_looping_call() -> None:
    a = {"product_id": "A"}
    traj = trajectory(
        s([c("list_products")]),
        s([c("get_stock", a)]),
        s([c("get_stock", a)]),
        s([c("get_stock", a)]),
        end="loop",
    )
    failure = classify(instance(), traj, WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.LOOP, 1)


def test_invalid_arguments_only_when_never_recovered() -> None:
    traj = trajectory(s([c("list_products")]), s([c("get_stock", error="invalid_arguments")]))
    failure = classify(instance(), traj, WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.INVALID_ARGUMENTS, 1)
    recovered = trajectory(s([c("get_stock", error="invalid_arguments")]), s([c("get_stock")]))
    failure = classify(instance(), recovered, WRONG_ANSWER)
    assert failure is not None and failure.mode is M.WRONG_ANSWER


def test_wrong_tool_when_the_reference_tool_was_never_used() -> None:
    traj = trajectory(s([c("list_products")]), s([c("no_such_tool", error="unknown_tool")]))
    failure = classify(instance(), traj, WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.WRONG_TOOL, 0)
    # a failed process check with the reference tool used: still the tools, not the answer
    inst = instance(success=[{"kind": "process", "order": ["get_stock", "list_products"]}])
    traj = trajectory(s([c("list_products")]), s([c("get_stock")]))
    failure = classify(inst, traj, [result("process")])
    assert failure is not None and (failure.mode, failure.step) == (M.WRONG_TOOL, 0)


def test_ignored_tool_error() -> None:
    traj = trajectory(s([c("get_stock", error="fault")]))
    failure = classify(instance(), traj, WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.IGNORED_TOOL_ERROR, 0)
    retried = trajectory(s([c("get_stock", error="fault")]), s([c("get_stock")]))
    failure = classify(instance(), retried, WRONG_ANSWER)
    assert failure is not None and failure.mode is M.WRONG_ANSWER


def test_hallucinated_answer_without_any_successful_call() -> None:
    failure = classify(instance(), trajectory(), WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.HALLUCINATED_ANSWER, 0)


def test_incomplete_state_at_the_last_write() -> None:
    traj = trajectory(
        s([c("get_stock")]),
        s([c("adjust_stock")], changed=["products.A.stock"]),
        s([c("get_stock")]),
    )
    failure = classify(instance(), traj, [result("state"), result("output", True)])
    assert failure is not None and (failure.mode, failure.step) == (M.INCOMPLETE_STATE, 1)


def test_wrong_answer_after_using_the_tools_right() -> None:
    failure = classify(instance(), trajectory(s([c("get_stock")])), WRONG_ANSWER)
    assert failure is not None and (failure.mode, failure.step) == (M.WRONG_ANSWER, 1)


def _run_broken(out: Path, agent: str) -> list[Any]:
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent=f"python:scoring.broken_agents:{agent}",
        tasks=["stock-*", "calc-*"],
        snapshots=False,
    )
    asyncio.run(Runner(config, out, parallel=2).run())
    with RunReader(out) as reader:
        return list(reader.records())


@pytest.mark.parametrize(
    ("agent", "mode"), [("WrongToolFirst", "wrong_tool"), ("InvalidArguments", "invalid_arguments")]
)
def test_a_broken_agent_gets_its_failure_mode(agent: str, mode: str, tmp_path: Path) -> None:
    records = _run_broken(tmp_path / agent, agent)
    assert len(records) >= 3
    for record in records:
        assert not record.score.passed, record.key
        assert (record.score.failure_mode, record.score.failure_step) == (mode, 0), record.key
