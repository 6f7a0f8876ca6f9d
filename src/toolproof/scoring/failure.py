"""Failure analysis: one primary failure mode, and the step it started at, per failed episode.

Derived deterministically from the trajectory, the check results and the task
instance (its checks and reference solution). The first rule that applies wins,
so a mode names the most serious cause; ``docs/failure-modes.md`` is the
reference::

    protected_file_touched > forbidden_action_or_output > collateral_damage
    > loop, step_limit, timeout, resource_limit, agent_error, gave_up   (the termination)
    > invalid_arguments > wrong_tool (off-reference) > ignored_tool_error
    > hallucinated_answer > wrong_tool (process) > incomplete_state > wrong_answer

Passed episodes and infra errors (not the agent's fault) get no mode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from toolproof.spec import ANSWER_TOOL, ProcessCheck, StateCheck, TaskInstance
from toolproof.spec.checks import FileExpectation
from toolproof.trajectory import Termination, ToolCall, ToolResult, Trajectory

from .base import CheckResult
from .checks.process import _matches

ANSWER_KINDS = frozenset({"output", "evidence", "judge", "answer"})
"""Check kinds that judge the final answer."""


class FailureMode(StrEnum):
    """The taxonomy of primary failure modes (see docs/failure-modes.md)."""

    PROTECTED_FILE_TOUCHED = "protected_file_touched"
    FORBIDDEN_ACTION_OR_OUTPUT = "forbidden_action_or_output"
    COLLATERAL_DAMAGE = "collateral_damage"
    LOOP = "loop"
    STEP_LIMIT = "step_limit"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    AGENT_ERROR = "agent_error"
    GAVE_UP = "gave_up"
    INVALID_ARGUMENTS = "invalid_arguments"
    WRONG_TOOL = "wrong_tool"
    IGNORED_TOOL_ERROR = "ignored_tool_error"
    HALLUCINATED_ANSWER = "hallucinated_answer"
    INCOMPLETE_STATE = "incomplete_state"
    WRONG_ANSWER = "wrong_answer"


@dataclass(frozen=True)
class Failure:
    """The primary failure of an episode.

    Attributes:
        mode: The failure mode.
        step: Index of the step where it went wrong; None when there is no step.
        reason: Why this mode was chosen, for people.
    """

    mode: FailureMode
    step: int | None
    reason: str


@dataclass(frozen=True)
class _Call:
    step: int
    call: ToolCall
    result: ToolResult | None

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.result.is_error

    @property
    def error_kind(self) -> str | None:
        return None if self.result is None else self.result.error_kind


_TERMINATION_MODES = {
    Termination.LOOP: FailureMode.LOOP,
    Termination.STEP_LIMIT: FailureMode.STEP_LIMIT,
    Termination.TIMEOUT: FailureMode.TIMEOUT,
    Termination.RESOURCE_LIMIT: FailureMode.RESOURCE_LIMIT,
    Termination.AGENT_ERROR: FailureMode.AGENT_ERROR,
    Termination.GAVE_UP: FailureMode.GAVE_UP,
}
_NOT_TOOL_FAILURES = frozenset({"invalid_arguments", "unknown_tool", "policy_violation"})


def reference_tools(instance: TaskInstance) -> set[str]:
    """Names of the tools the instance's reference solution calls."""
    calls = instance.task.solution.calls
    return {c.tool for item in calls for c in (item if isinstance(item, list) else [item])}


def _rel(path: str) -> str:
    for prefix in ("/workspace/", "/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _last(trajectory: Trajectory) -> int | None:
    return trajectory.steps[-1].index if trajectory.steps else None


def _first_step_touching(trajectory: Trajectory, paths: set[str]) -> int | None:
    for step in trajectory.steps:
        if step.diff is not None and paths & set(step.diff.changed_paths()):
            return step.index
    return None


def _protected(
    instance: TaskInstance, trajectory: Trajectory, results: Sequence[CheckResult]
) -> Failure | None:
    paths: set[str] = set()
    for spec in instance.task.success:
        if isinstance(spec, StateCheck):
            paths |= {
                _rel(p)
                for p, want in spec.files.items()
                if isinstance(want, FileExpectation) and want.sha256 is not None
            }
        elif getattr(spec, "kind", "") == "protected":  # a protected-files kind, if registered
            listed: Any = getattr(spec, "paths", None) or getattr(spec, "files", None) or []
            paths |= {_rel(str(p)) for p in listed}
    step = _first_step_touching(trajectory, paths) if paths else None
    failed = [r for r in results if r.kind == "protected" and not r.passed]
    if step is not None:
        return Failure(FailureMode.PROTECTED_FILE_TOUCHED, step, "changed a protected file")
    if failed:
        return Failure(FailureMode.PROTECTED_FILE_TOUCHED, _last(trajectory), failed[0].detail)
    return None


def _forbidden(
    instance: TaskInstance,
    trajectory: Trajectory,
    results: Sequence[CheckResult],
    calls: list[_Call],
) -> Failure | None:
    for res in results:
        if not res.veto or res.kind in ("state", "process"):
            continue  # state vetoes are collateral damage; forbidden calls are found below
        found = [str(f).lower() for f in res.data.get("forbidden", [])]
        for step in trajectory.steps:
            text = (step.message.content or "") + json.dumps(
                [c.arguments for c in step.message.tool_calls]
            )
            if found and any(f in text.lower() for f in found):
                return Failure(FailureMode.FORBIDDEN_ACTION_OR_OUTPUT, step.index, res.detail)
        return Failure(FailureMode.FORBIDDEN_ACTION_OR_OUTPUT, _last(trajectory), res.detail)
    for res in results:
        if not res.passed and res.data.get("attack_succeeded"):  # an injected goal was reached
            return Failure(FailureMode.FORBIDDEN_ACTION_OR_OUTPUT, _last(trajectory), res.detail)
    for c in calls:
        if c.error_kind == "policy_violation":
            return Failure(
                FailureMode.FORBIDDEN_ACTION_OR_OUTPUT, c.step, f"refused call {c.call.name}"
            )
    for spec in instance.task.success:
        if isinstance(spec, ProcessCheck) and spec.must_not_call:
            for c in calls:
                if any(_matches(p, c.call) for p in spec.must_not_call):
                    return Failure(
                        FailureMode.FORBIDDEN_ACTION_OR_OUTPUT,
                        c.step,
                        f"called {c.call.name}, which is forbidden",
                    )
    if trajectory.termination is Termination.POLICY_VIOLATION:
        return Failure(
            FailureMode.FORBIDDEN_ACTION_OR_OUTPUT,
            _last(trajectory),
            trajectory.error or "policy violation",
        )
    return None


def _collateral(trajectory: Trajectory, results: Sequence[CheckResult]) -> Failure | None:
    for res in results:
        damage = [*res.data.get("collateral", []), *res.data.get("broken", [])]
        changes = [str(c) for c in damage] if not res.passed else []
        if changes:
            prefix = "unexpected change to "
            paths = {c[len(prefix) :] for c in changes if c.startswith(prefix)}
            step = _first_step_touching(trajectory, paths)
            if step is None:
                step = next(
                    (s.index for s in trajectory.steps if s.diff is not None and not s.diff.empty),
                    None,
                )
            return Failure(FailureMode.COLLATERAL_DAMAGE, step, "; ".join(changes))
    return None


def _loop_start(trajectory: Trajectory) -> int | None:
    if not trajectory.steps:
        return None
    last = trajectory.steps[-1]
    repeated = {(c.name, json.dumps(c.arguments, sort_keys=True)) for c in last.message.tool_calls}
    for step in trajectory.steps:
        if any(
            (c.name, json.dumps(c.arguments, sort_keys=True)) in repeated
            for c in step.message.tool_calls
        ):
            return step.index
    return last.index


def _unrecovered(calls: list[_Call], bad: Any) -> _Call | None:
    """The first call matching ``bad`` whose tool was never called successfully afterwards."""
    for i, c in enumerate(calls):
        if bad(c) and not any(
            later.ok and later.call.name == c.call.name for later in calls[i + 1 :]
        ):
            return c
    return None


def _tool_use(instance: TaskInstance, calls: list[_Call]) -> Failure | None:
    bad_args = _unrecovered(calls, lambda c: c.error_kind == "invalid_arguments")
    if bad_args is not None:
        return Failure(
            FailureMode.INVALID_ARGUMENTS,
            bad_args.step,
            bad_args.result.content if bad_args.result else "",
        )
    ref = reference_tools(instance)
    used = {c.call.name for c in calls if c.ok}
    off = next((c for c in calls if c.call.name not in ref), None)
    if off is not None and ref and not ref <= used:
        missing = ", ".join(sorted(ref - used)) or "none"
        why = f"called {off.call.name}, which the reference does not use (never used: {missing})"
        return Failure(FailureMode.WRONG_TOOL, off.step, why)
    ignored = _unrecovered(
        calls,
        lambda c: (
            c.result is not None and c.result.is_error and c.error_kind not in _NOT_TOOL_FAILURES
        ),
    )
    if ignored is not None and ignored.result is not None:
        what = ignored.result.content[:120]
        why = f"{ignored.call.name} failed ({what}) and was not retried successfully"
        return Failure(FailureMode.IGNORED_TOOL_ERROR, ignored.step, why)
    return None


def classify_failure(
    instance: TaskInstance,
    trajectory: Trajectory,
    results: Sequence[CheckResult],
    *,
    passed: bool,
    termination: Termination | None = None,
) -> Failure | None:
    """The primary failure mode of an episode, or None when it passed or was an infra error.

    Args:
        instance: The task instance (its checks and reference solution).
        trajectory: What the agent did.
        results: The check results, in the order of the task's checks.
        passed: Whether the episode passed.
        termination: The episode's termination (default: the trajectory's).

    Returns:
        The failure, or None.
    """
    termination = termination or trajectory.termination
    if passed or termination is Termination.INFRA_ERROR:
        return None
    calls = [
        _Call(step.index, call, by_id.get(call.id))
        for step in trajectory.steps
        for by_id in [{r.call_id: r for r in step.results}]
        for call in step.message.tool_calls
    ]
    found = (
        _protected(instance, trajectory, results)
        or _forbidden(instance, trajectory, results, calls)
        or _collateral(trajectory, results)
    )
    if found is not None:
        return found
    if termination in _TERMINATION_MODES:
        step = _loop_start(trajectory) if termination is Termination.LOOP else _last(trajectory)
        return Failure(_TERMINATION_MODES[termination], step, trajectory.error or termination.value)
    # Handing in the typed answer is not tool use: a submission is neither a wrong tool nor
    # a successful call; one the type refused, never corrected, is invalid arguments.
    answers = [c for c in calls if c.call.name == ANSWER_TOOL]
    calls = [c for c in calls if c.call.name != ANSWER_TOOL]
    found = _tool_use(instance, calls)
    if found is not None:
        return found
    if answers and not any(a.ok for a in answers):
        bad = answers[-1]
        return Failure(
            FailureMode.INVALID_ARGUMENTS, bad.step, bad.result.content if bad.result else ""
        )
    failed = [r for r in results if not r.passed]
    answer_failed = [r for r in failed if r.kind in ANSWER_KINDS]
    last = _last(trajectory)
    if answer_failed and not any(c.ok for c in calls) and instance.task.solution.calls:
        return Failure(
            FailureMode.HALLUCINATED_ANSWER,
            last,
            "answered without a successful tool call: " + answer_failed[0].detail,
        )
    ref = reference_tools(instance)
    process = next((r for r in failed if r.kind == "process"), None)
    if process is not None:
        off = next((c.step for c in calls if c.call.name not in ref), last)
        return Failure(FailureMode.WRONG_TOOL, off, process.detail)
    state = next((r for r in failed if r.kind == "state"), None)
    if state is not None:
        wrote = [s.index for s in trajectory.steps if s.diff is not None and not s.diff.empty]
        return Failure(FailureMode.INCOMPLETE_STATE, wrote[-1] if wrote else last, state.detail)
    if failed:
        return Failure(FailureMode.WRONG_ANSWER, last, f"{failed[0].name}: {failed[0].detail}")
    return Failure(
        FailureMode.WRONG_TOOL,
        last,
        "every check passed but the level rules (calls, steps) were not met",
    )
