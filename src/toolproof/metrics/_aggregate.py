"""The metric block of summary.json: one streaming accumulator over episodes.

:class:`Aggregate` takes :class:`EpisodeStats` one at a time (``add``) and keeps
counters, per-task counts and quantile sketches only (exact up to a few thousand
values, bounded buckets beyond: :mod:`toolproof.metrics.sketch`), so its memory does
not grow with the number of episodes and the result does not depend on their order.
The same block is computed for the whole run and for every breakdown group.
Every name and definition is in ``docs/metrics.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolproof.scoring import Level
from toolproof.scoring.failure import FailureMode
from toolproof.trajectory import Termination

from ._episode import EpisodeStats
from .sketch import QuantileSketch
from .stats import bootstrap_mean_ci, mean_pass_at_k, mean_pass_hat_k, percentile, proportion

PENDING = 256
"""Scored episodes an :class:`Aggregate` holds before counting their values in its sketches."""
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
BOOTSTRAP_BUDGET = 150_000
"""Most resampled task means per breakdown group; big groups get fewer resamples (>= 200)."""


def k_values(top: int) -> list[int]:
    """The k of pass@k and pass^k: 1..10, then powers of two, then K itself.

    Every k up to K would be quadratic in K (and unreadable) for runs with
    hundreds of epochs; these keep the curve's shape and its end point.
    """
    ks = {k for k in range(1, min(top, 10) + 1)}
    power = 16
    while power < top:
        ks.add(power)
        power *= 2
    if top >= 1:
        ks.add(top)
    return sorted(ks)


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _rate(part: int, whole: int) -> float | None:
    return _r(part / whole) if whole else None


def distribution(values: Sequence[float] | QuantileSketch) -> dict[str, Any]:
    """``{"n", "mean", "median", "p95"}`` of the values; statistics are None when empty."""
    if isinstance(values, QuantileSketch):
        return values.summary()
    n = len(values)
    return {
        "n": n,
        "mean": _r(math.fsum(values) / n) if n else None,
        "median": _r(percentile(values, 50.0)),
        "p95": _r(percentile(values, 95.0)),
    }


def _counts(names: list[str], counter: Counter[str]) -> dict[str, int]:
    """Every known name (0 when unseen) plus any other name seen."""
    return {**dict.fromkeys(names, 0), **dict(sorted(counter.items()))}


class Aggregate:
    """Accumulates the metrics of a set of episodes; :meth:`to_dict` gives the block."""

    def __init__(self, *, capped: bool = False) -> None:
        self.capped = capped
        self.finished = self.infra = self.retries = 0
        self.passed = self.loose = 0
        self.levels: Counter[str] = Counter()
        self.terminations: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.per_task: dict[str, list[int]] = {}
        self.eff_all, self.eff_passed = QuantileSketch(), QuantileSketch()
        self.calls = self.to_ref = self.ref_calls = self.to_offered = self.valid = 0
        self.errors = self.repeated = self.unused = self.redundant = 0
        self.error_kinds: Counter[str] = Counter()
        self.step_agent, self.step_tool = QuantileSketch(), QuantileSketch()
        self.ep_agent, self.ep_tool, self.ep_wall = (
            QuantileSketch(),
            QuantileSketch(),
            QuantileSketch(),
        )
        self.tokens_in = self.tokens_out = 0
        self.ep_tokens = QuantileSketch()
        self.estimated = False
        self.priced = self.unpriced = self.no_usage = 0
        self.cost_total = 0.0
        self.ep_cost = QuantileSketch()
        self.judge_checks = self.judge_samples = self.judge_in = self.judge_out = 0
        self.judge_unpriced = 0
        self.judge_cost = 0.0
        self.ev_required = self.ev_hits = self.ev_episodes = self.vetoed = 0
        self.task_errors = 0
        self._pending: list[EpisodeStats] = []

    def add(self, s: EpisodeStats) -> None:
        """Count one episode. Spend (tokens, cost) counts for every episode; the
        rest only for scored ones (infra errors are out of every denominator)."""
        self.finished += 1
        self.retries += max(0, s.attempts - 1)
        self.terminations[s.termination] += 1
        self.tokens_in += s.input_tokens
        self.tokens_out += s.output_tokens
        self.estimated = self.estimated or s.tokens_estimated
        if s.pricing == "priced":
            self.priced += 1
            self.cost_total += s.cost_usd or 0.0
        elif s.pricing == "unpriced":
            self.unpriced += 1
        else:
            self.no_usage += 1
        self.judge_checks += s.judge_checks
        self.judge_samples += s.judge_samples
        self.judge_in += s.judge_input_tokens
        self.judge_out += s.judge_output_tokens
        self.judge_unpriced += s.judge_unpriced
        self.judge_cost += s.judge_cost_usd or 0.0
        if s.infra_error:
            self.infra += 1
            return
        if s.task_error:  # the task's own check is broken: says nothing about the agent
            self.task_errors += 1
            return
        task = self.per_task.setdefault(s.task_id, [0, 0])
        task[0] += 1
        task[1] += s.passed
        self.passed += s.passed
        self.loose += s.passed_loose
        self.levels[s.level] += 1
        if s.failure_mode is not None and not s.passed:
            self.failures[s.failure_mode] += 1
        self._add_calls(s)
        self._pending.append(s)  # its sketch values: counted in bulk (flush)
        if len(self._pending) >= PENDING:
            self.flush()
        if s.evidence_required:
            self.ev_episodes += 1
            self.ev_required += s.evidence_required
            self.ev_hits += s.evidence_hits
        self.vetoed += s.vetoed

    def flush(self) -> None:
        """Count the pending episodes' values in the sketches, metric by metric.

        A sketch's :meth:`~QuantileSketch.extend` gives the state its ``add`` would, one
        value after the other, at a fraction of the cost: an episode lands in the run's
        block and about seven breakdown groups, and adding its nine values to each
        group's sketches one call at a time was most of the cost of counting it.
        """
        pending = self._pending
        if not pending:
            return
        self._pending = []
        ratios = [(s.efficiency, s.passed) for s in pending if s.efficiency is not None]
        self.eff_all.extend([ratio for ratio, _ in ratios])
        self.eff_passed.extend([ratio for ratio, passed in ratios if passed])
        self.step_agent.extend([v for s in pending for v in s.step_agent_s])
        self.step_tool.extend([v for s in pending for v in s.step_tool_s])
        self.ep_agent.extend([s.agent_s for s in pending])
        self.ep_tool.extend([s.tool_s for s in pending])
        self.ep_wall.extend([s.duration_s for s in pending])
        self.ep_tokens.extend([s.tokens for s in pending])
        self.ep_cost.extend([s.cost_usd or 0.0 for s in pending if s.pricing == "priced"])

    def merge(self, other: Aggregate) -> None:
        """Count ``other``'s episodes here too: the block of adding each of them here.

        Counts and sums add (a float sum may differ in its last bit from adding one by
        one, as it does with another finishing order), counters and per-task counts add,
        sketches merge (``QuantileSketch.merge``: the same percentiles).

        Raises:
            TypeError: a field this does not know how to merge (a new one: add it here).
        """
        self.flush()
        other.flush()
        mine = vars(self)
        for name, value in vars(other).items():
            if name in ("capped", "_pending"):
                continue
            if isinstance(value, bool):
                mine[name] = mine[name] or value
            elif isinstance(value, int | float):
                mine[name] += value
            elif isinstance(value, Counter):
                mine[name].update(value)
            elif isinstance(value, QuantileSketch):
                mine[name].merge(value)
            elif name == "per_task":
                for task, (n, passed) in value.items():
                    counts = self.per_task.setdefault(task, [0, 0])
                    counts[0] += n
                    counts[1] += passed
            else:
                raise TypeError(f"Aggregate.merge does not know field {name!r}")

    def _add_calls(self, s: EpisodeStats) -> None:
        c = s.calls
        self.calls += c.calls
        if s.has_reference_tools:
            self.ref_calls += c.calls
            self.to_ref += c.to_reference
        self.to_offered += c.to_offered
        self.valid += c.valid_arguments
        self.errors += c.errors
        self.error_kinds.update(c.error_kinds)
        self.repeated += c.repeated
        self.unused += c.unused
        self.redundant += c.redundant

    @property
    def scored(self) -> int:
        """Episodes that count: finished minus infra errors and task errors."""
        return self.finished - self.infra - self.task_errors

    def _success(self) -> dict[str, Any]:
        out: dict[str, Any] = proportion(self.passed, self.scored).to_dict()
        # In task order, not arrival order: the bootstrap's draws then do not depend on
        # which episode finished first (parallel runs, worker processes).
        means = [c / n for _, (n, c) in sorted(self.per_task.items())]
        low = high = None
        resamples = BOOTSTRAP_RESAMPLES
        if self.capped and means:
            resamples = max(200, min(resamples, BOOTSTRAP_BUDGET // len(means)))
        if means:
            low, high = bootstrap_mean_ci(means, resamples=resamples, seed=BOOTSTRAP_SEED)
        out.update(
            bootstrap_ci_low=_r(low),
            bootstrap_ci_high=_r(high),
            bootstrap_resamples=resamples if means else 0,
            tasks=len(means),
        )
        return out

    def _pass_k(self) -> dict[str, Any]:
        top = max((n for n, _ in self.per_task.values()), default=0)
        at: dict[str, float | None] = {}
        hat: dict[str, float | None] = {}
        used: dict[str, int] = {}
        for k in k_values(top):
            table = {t: (n, c) for t, (n, c) in self.per_task.items() if n >= k}
            at[str(k)] = _r(mean_pass_at_k(table, k))
            hat[str(k)] = _r(mean_pass_hat_k(table, k))
            used[str(k)] = len(table)
        return {"pass_at_k": at, "pass_hat_k": hat, "pass_k_tasks": used}

    def _cost(self) -> dict[str, Any]:
        if self.priced == 0 and self.unpriced == 0:
            status = "no_usage"
        elif self.unpriced == 0:
            status = "priced"
        else:
            status = "unpriced" if self.priced == 0 else "partial"
        return {
            "status": status,
            "usd": _r(self.cost_total) if status in ("priced", "partial") else None,
            "per_episode_usd": distribution(self.ep_cost) if self.priced else None,
            "priced_episodes": self.priced,
            "unpriced_episodes": self.unpriced,
            "no_usage_episodes": self.no_usage,
        }

    def _judge(self) -> dict[str, Any]:
        priced = self.judge_checks - self.judge_unpriced
        status = (
            "none"
            if not self.judge_checks
            else ("priced" if not self.judge_unpriced else "unpriced")
        )
        if status == "unpriced" and priced:
            status = "partial"
        return {
            "checks": self.judge_checks,
            "samples": self.judge_samples,
            "tokens": {"input": self.judge_in, "output": self.judge_out},
            "cost": {
                "status": status,
                "usd": _r(self.judge_cost) if status in ("priced", "partial") else None,
                "unpriced_checks": self.judge_unpriced,
            },
        }

    def to_dict(self) -> dict[str, Any]:
        """The metric block (names and definitions: docs/metrics.md)."""
        self.flush()
        n = self.scored
        return {
            "episodes": {
                "finished": self.finished,
                "scored": n,
                "infra_errors": self.infra,
                "task_errors": self.task_errors,
                "infra_retries": self.retries,
            },
            "success": self._success(),
            **self._pass_k(),
            "levels": {level.value: self.levels[level.value] for level in Level},
            "pass_strict": proportion(self.passed, n).to_dict(),
            "pass_loose": proportion(self.loose, n).to_dict(),
            "efficiency": {
                "all": distribution(self.eff_all),
                "passed": distribution(self.eff_passed),
            },
            "tool_use": {
                "calls": self.calls,
                "calls_per_episode": _rate(self.calls, n),
                "reference_tool_rate": _rate(self.to_ref, self.ref_calls),
                "offered_tool_rate": _rate(self.to_offered, self.calls),
                "valid_arguments_rate": _rate(self.valid, self.calls),
                "error_rate": _rate(self.errors, self.calls),
                "errors": dict(sorted(self.error_kinds.items())),
            },
            "redundancy": {
                "calls": self.calls,
                "repeated": self.repeated,
                "unused": self.unused,
                "redundant": self.redundant,
                "rate": _rate(self.redundant, self.calls),
                "repeat_rate": _rate(self.repeated, self.calls),
                "unused_rate": _rate(self.unused, self.calls),
            },
            "latency": {
                "agent_s": {
                    "step": distribution(self.step_agent),
                    "episode": distribution(self.ep_agent),
                },
                "tool_s": {
                    "step": distribution(self.step_tool),
                    "episode": distribution(self.ep_tool),
                },
                "episode_s": distribution(self.ep_wall),
            },
            "tokens": {
                "input": self.tokens_in,
                "output": self.tokens_out,
                "total": self.tokens_in + self.tokens_out,
                "per_episode": distribution(self.ep_tokens),
                "estimated": self.estimated,
            },
            "cost": self._cost(),
            "judge": self._judge(),
            "answers": {
                "evidence": {
                    "episodes": self.ev_episodes,
                    "required": self.ev_required,
                    "hits": self.ev_hits,
                    "hit_rate": _rate(self.ev_hits, self.ev_required),
                },
                "hallucination": proportion(self.vetoed, n).to_dict(),
            },
            "terminations": _counts([t.value for t in Termination], self.terminations),
            "failure_modes": _counts([m.value for m in FailureMode], self.failures),
        }
