"""One episode reduced to the numbers metrics need (so a run never sits in memory whole)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from toolproof.results import EpisodeRecord

from ._calls import CallStats, analyze_calls

Pricing = Literal["priced", "unpriced", "no_usage"]


@dataclass(frozen=True, slots=True)
class EpisodeStats:
    """Everything the metrics use from one episode (see docs/metrics.md for each field)."""

    task_id: str
    epoch: int
    category: str
    type: str
    difficulty: int
    domain: str
    tags: tuple[str, ...]
    judged: bool
    infra_error: bool
    task_error: bool
    """A check of the task is broken (Score.task_error): out of every denominator."""
    attempts: int
    passed: bool
    """pass@strict: the episode passed (a typed-answer task: with its submit_answer value)."""
    loose: bool
    """pass@loose: it passed, or would with its free-text answer read by the loose rule."""
    level: str
    termination: str
    fraction: float
    failure_mode: str | None
    failure_step: int | None
    reference_calls: int
    has_reference_tools: bool
    calls: CallStats
    step_agent_s: tuple[float, ...]
    step_tool_s: tuple[float, ...]
    duration_s: float
    input_tokens: int
    output_tokens: int
    tokens_estimated: bool
    pricing: Pricing
    cost_usd: float | None
    judge_checks: int
    judge_samples: int
    judge_input_tokens: int
    judge_output_tokens: int
    judge_cost_usd: float | None
    judge_unpriced: int
    evidence_required: int
    evidence_hits: int
    vetoed: bool

    @property
    def passed_loose(self) -> bool:
        """pass@loose (see :attr:`loose`; docs/metrics.md, "Strict and loose")."""
        return self.loose or self.passed

    @property
    def agent_s(self) -> float:
        """Seconds waiting on the agent over the episode."""
        return sum(self.step_agent_s)

    @property
    def tool_s(self) -> float:
        """Seconds in tools over the episode."""
        return sum(self.step_tool_s)

    @property
    def efficiency(self) -> float | None:
        """Tool calls / reference calls; None when the reference makes no call."""
        if self.reference_calls <= 0:
            return None
        return self.calls.calls / self.reference_calls

    @property
    def tokens(self) -> int:
        """Agent input plus output tokens."""
        return self.input_tokens + self.output_tokens


def _agent_cost(record: EpisodeRecord) -> tuple[Pricing, float | None, bool]:
    """The agent's pricing status, cost (None unless every step with tokens is priced)."""
    total = 0.0
    used = estimated = False
    priced_all = True
    for step in record.trajectory.steps:
        usage = step.usage
        if usage is None:
            continue
        estimated = estimated or usage.estimated
        if usage.input_tokens or usage.output_tokens or usage.cost_usd:
            used = True
            if usage.cost_usd is None:
                priced_all = False
            else:
                total += usage.cost_usd
    if not used:
        return "no_usage", None, estimated
    if not priced_all:
        return "unpriced", None, estimated
    return "priced", total, estimated


def episode_stats(record: EpisodeRecord) -> EpisodeStats:
    """Reduce a record to its :class:`EpisodeStats`."""
    facts, score, traj = record.task, record.score, record.trajectory
    pricing, cost, estimated = _agent_cost(record)
    usage = traj.usage()
    judge_checks = judge_samples = judge_in = judge_out = judge_unpriced = 0
    judge_cost: float | None = None
    required = hits = 0
    for check in score.checks:
        if check.kind == "judge":
            judge_checks += 1
            judge_samples += len(check.data.get("samples", []))
            spent = check.data.get("usage") or {}
            judge_in += int(spent.get("input_tokens", 0))
            judge_out += int(spent.get("output_tokens", 0))
            if spent.get("cost_usd") is None:
                judge_unpriced += 1
            else:
                judge_cost = (judge_cost or 0.0) + float(spent["cost_usd"])
        elif check.kind == "evidence":
            found = len(check.data.get("hits", []))
            required += found + len(check.data.get("missing", []))
            hits += found
    return EpisodeStats(
        task_id=facts.id,
        epoch=record.epoch,
        category=facts.category,
        type=facts.type,
        difficulty=facts.difficulty,
        domain=facts.domain,
        tags=tuple(facts.tags),
        judged=facts.judged or score.judged,
        infra_error=record.infra_error,
        task_error=score.task_error,
        attempts=record.attempts,
        passed=score.passed,
        loose=score.passed if score.passed_loose is None else score.passed_loose,
        level=score.level.value,
        termination=score.termination.value,
        fraction=score.fraction,
        failure_mode=score.failure_mode,
        failure_step=score.failure_step,
        reference_calls=facts.reference_calls,
        has_reference_tools=bool(facts.reference_tools),
        calls=analyze_calls(traj, facts.reference_tools, facts.reference_calls),
        step_agent_s=tuple(s.agent_s for s in traj.steps),
        step_tool_s=tuple(s.tool_s for s in traj.steps),
        duration_s=traj.duration_s,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        tokens_estimated=estimated,
        pricing=pricing,
        cost_usd=cost,
        judge_checks=judge_checks,
        judge_samples=judge_samples,
        judge_input_tokens=judge_in,
        judge_output_tokens=judge_out,
        judge_cost_usd=judge_cost,
        judge_unpriced=judge_unpriced,
        evidence_required=required,
        evidence_hits=hits,
        vetoed=any(c.veto for c in score.checks),
    )
