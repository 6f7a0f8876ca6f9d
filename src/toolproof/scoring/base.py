"""Check results, scores, and the registry of check evaluators (``@check("state")``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from toolproof.spec import TaskInstance
from toolproof.trajectory import Termination, Trajectory
from toolproof.worlds import World, WorldSnapshot


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
    data: dict[str, Any] = Field(default_factory=dict, description="Check-specific details.")


class Score(BaseModel):
    """The score of one episode."""

    passed: bool
    level: Level
    fraction: float = Field(description="Weighted share of check score, 0 if vetoed.")
    checks: list[CheckResult]
    termination: Termination
    tool_calls: int
    failure_mode: str | None = Field(None, description="Primary failure mode of a failed episode.")
    failure_step: int | None = Field(None, description="Step where it went wrong, when known.")
    judged: bool = Field(False, description="Whether an LLM judge contributed.")


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


def check(kind: str) -> Callable[[Evaluator], Evaluator]:
    """Register the evaluator of a check kind.

    Raises:
        ValueError: the kind already has an evaluator.
    """

    def register(fn: Evaluator) -> Evaluator:
        if kind in _REGISTRY:
            raise ValueError(f"check kind {kind!r} is already registered")
        _REGISTRY[kind] = fn
        return fn

    return register


def evaluators() -> dict[str, Evaluator]:
    """Registered evaluators by kind."""
    from . import checks  # noqa: F401  (registers the built-in kinds)

    return _REGISTRY


def run_check(spec: Any, ctx: ScoringContext, index: int) -> CheckResult:
    """Evaluate one check with its registered evaluator.

    A check with no evaluator, or one that crashes, fails with the reason as its
    detail; it never aborts scoring.
    """
    name = spec.name or f"{spec.kind}_{index}"
    evaluator = evaluators().get(spec.kind)
    if evaluator is None:
        return CheckResult(
            name=name, kind=spec.kind, passed=False, score=0.0, detail="no evaluator"
        )
    try:
        return evaluator(spec, ctx, index)
    except Exception as exc:
        return CheckResult(
            name=name,
            kind=spec.kind,
            passed=False,
            score=0.0,
            weight=spec.weight,
            detail=f"check crashed: {type(exc).__name__}: {exc}",
        )


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
