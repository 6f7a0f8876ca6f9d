"""Check results, scores, and the registry of check evaluators (``@check("state")``).

The registry lives here, below ``checks/``: each check module registers its kind
with :func:`check` when it is imported. This module never imports ``checks`` by name
(no import cycle remains): a built-in kind's module is found in :data:`BUILTIN_KINDS`
and imported the first time a check of that kind runs (:func:`evaluator_of`), so an
episode loads the check modules its task uses, not all of them;
:func:`toolproof.scoring.evaluators` loads them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolproof.spec import TaskInstance
from toolproof.trajectory import Termination, Trajectory
from toolproof.worlds import World, WorldSnapshot

from ._effects import ReferenceEffect
from .roles import Role, static_role


class Level(StrEnum):
    """Graded outcome of an episode."""

    PERFECT = "perfect"
    ACCEPTABLE = "acceptable"
    PARTIAL = "partial"
    FAIL = "fail"


class CheckResult(BaseModel):
    """The outcome of one check."""

    name: str
    kind: str
    passed: bool
    score: float = Field(description="0..1; partial credit where the check gives it.")
    weight: float = 1.0
    detail: str = Field("", description="Why it passed or failed, for people.")
    veto: bool = Field(False, description="A forbidden thing happened: the episode scores 0.")
    guard: bool = Field(
        False,
        description=(
            "The check holds when the agent did not do something (nothing deleted, no "
            "forbidden call): it can take credit away but never gives any."
        ),
    )
    task_error: bool = Field(
        False,
        description=(
            "The check itself is broken (its module cannot be imported, it raised): a bug "
            "of the task, not of the agent; the episode is kept out of the agent's score."
        ),
    )
    data: dict[str, Any] = Field(default_factory=dict, description="Check-specific details.")


class Score(BaseModel):
    """The score of one episode."""

    passed: bool
    level: Level
    fraction: float = Field(
        description="Weighted share of progress-check score (guards excluded), 0 if vetoed."
    )
    checks: list[CheckResult]
    termination: Termination
    tool_calls: int
    failure_mode: str | None = Field(None, description="Primary failure mode of a failed episode.")
    failure_step: int | None = Field(None, description="Step where it went wrong, when known.")
    judged: bool = Field(False, description="Whether an LLM judge contributed.")
    passed_loose: bool | None = Field(
        None,
        description=(
            "pass@loose: passed when a free-text answer to a typed-answer task is read "
            "by the loose rule (exactly one candidate of the type, no rival, no negation) "
            "instead of requiring submit_answer; equals passed for other tasks. None in "
            "records written before it existed (read as passed)."
        ),
    )
    task_error: bool = Field(
        False,
        description=(
            "A check of the task is broken (see CheckResult.task_error): the episode says "
            "nothing about the agent and metrics keep it out of every denominator."
        ),
    )


MAX_CHECKED_FILE_BYTES = 64 << 20
"""A workspace file a check reads may be at most this big (a bigger one counts as absent)."""


@dataclass
class ScoringContext:
    """What a check sees, after the episode, on the harness side."""

    instance: TaskInstance
    trajectory: Trajectory
    initial: WorldSnapshot
    final: WorldSnapshot
    world: World
    """The final world (the agent can no longer act on it)."""
    task_dir: Path | None = None
    """The directory of the task file; custom check modules are looked up in its suite."""
    reference: ReferenceEffect | None = None
    """What the reference solution does to a fresh world of this instance (the engine
    plays it once per task and seed); collateral damage is judged against it. None when
    the task has none to compare with (see :func:`toolproof.scoring.collateral.needs_reference`)."""

    def read_file(self, rel: str) -> bytes | None:
        """The final content of a workspace file, or None if absent."""
        if self.world.workspace is None:
            return None
        workspace = self.world.workspace
        try:  # no link followed, no FIFO or device opened (the agent made this tree)
            data = workspace.read_bytes(workspace.parts(rel), MAX_CHECKED_FILE_BYTES)
        except (ValueError, OSError):
            return None
        return data if len(data) <= MAX_CHECKED_FILE_BYTES else None


Evaluator = Callable[[Any, ScoringContext, int], CheckResult]
"""Evaluates one check (its spec model, the context, its index in the task)."""

_REGISTRY: dict[str, Evaluator] = {}
CHECKS_PACKAGE = "toolproof.scoring.checks"
"""The package of the built-in check modules."""
BUILTIN_KINDS: dict[str, str] = {
    "answer": "answer",
    "change_budget": "lint",
    "custom": "custom",
    "evidence": "evidence",
    "hidden_tests": "hidden_tests",
    "judge": "judge",
    "lint": "lint",
    "lint_answer": "lint",
    "no_suppressions": "lint",
    "output": "output",
    "process": "process",
    "protected": "lint",
    "state": "state",
}
"""Each built-in kind and the module of :data:`CHECKS_PACKAGE` that registers it (a test
holds this to what the modules register)."""


def check(kind: str) -> Callable[[Evaluator], Evaluator]:
    """Register the evaluator of a check kind.

    Raises:
        ValueError: the kind already has an evaluator (a built-in kind counts as
            registered before its module is imported).
    """

    def register(fn: Evaluator) -> Evaluator:
        home = BUILTIN_KINDS.get(kind)
        if kind in _REGISTRY or (home is not None and fn.__module__ != f"{CHECKS_PACKAGE}.{home}"):
            raise ValueError(f"check kind {kind!r} is already registered")
        _REGISTRY[kind] = fn
        return fn

    return register


def registered() -> dict[str, Evaluator]:
    """The evaluators registered so far, by kind (a built-in kind once its module is
    imported: use ``scoring.evaluators()`` for every one)."""
    return _REGISTRY


def evaluator_of(kind: str) -> Evaluator | None:
    """The evaluator of ``kind``, importing its built-in module on first use; None for
    a kind nobody registered."""
    evaluator = _REGISTRY.get(kind)
    home = BUILTIN_KINDS.get(kind)
    if evaluator is None and home is not None:
        importlib.import_module(f"{CHECKS_PACKAGE}.{home}")
        evaluator = _REGISTRY.get(kind)
    return evaluator


def kind_names() -> list[str]:
    """Every check kind, built-in or registered, without importing a check module."""
    return sorted({*BUILTIN_KINDS, *_REGISTRY})


def run_check(spec: Any, ctx: ScoringContext, index: int) -> CheckResult:
    """Evaluate one check with its registered evaluator.

    A check with no evaluator, or one that crashes, fails with the reason as its
    detail; it never aborts scoring. A check whose kind is a guard
    (:func:`~toolproof.scoring.roles.static_role`) is marked ``guard``.
    """
    name = spec.name or f"{spec.kind}_{index}"
    evaluator = evaluator_of(spec.kind)
    if evaluator is None:
        return CheckResult(
            name=name, kind=spec.kind, passed=False, score=0.0, detail="no evaluator"
        )
    try:
        outcome = evaluator(spec, ctx, index)
    except Exception as exc:
        outcome = CheckResult(
            name=name,
            kind=spec.kind,
            passed=False,
            score=0.0,
            weight=spec.weight,
            detail=f"check crashed: {type(exc).__name__}: {exc}",
        )
    if not outcome.guard and static_role(spec) is Role.GUARD:
        outcome = outcome.model_copy(update={"guard": True})
    return outcome


def result(spec: Any, index: int, passed: bool, detail: str, **extra: Any) -> CheckResult:
    """A CheckResult named after the spec (or ``kind_index``)."""
    return CheckResult(
        name=spec.name or f"{spec.kind}_{index}",
        kind=spec.kind,
        passed=passed,
        score=extra.pop("score", 1.0 if passed else 0.0),
        weight=spec.weight,
        detail=detail,
        **extra,
    )
