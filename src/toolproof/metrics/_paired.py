"""Rows of a paired comparison: the compared metrics and their significance tests.

Binary metrics are tested with the exact McNemar test over paired episodes;
continuous ones with a paired percentile bootstrap over per-task means (see
:mod:`toolproof.metrics.compare`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._episode import EpisodeStats
from .stats import mcnemar_exact, paired_bootstrap_diff

Pair = tuple[EpisodeStats, EpisodeStats]
"""The same task instance in run A and run B."""


@dataclass(frozen=True)
class CompareMetric:
    """A metric the comparison reports.

    Attributes:
        name: Its name (``--metric NAME``).
        description: What it is, for people.
        binary: Tested with McNemar (True) or a paired bootstrap (False).
        higher_is_better: Direction of improvement.
        value: The per-episode value; None when undefined for that episode.
        passed_only: Compared over pairs where both episodes passed. Resource
            metrics (calls, time, tokens, cost) are: an episode that gave up
            early spends little, and counting it would call giving up an
            improvement.
    """

    name: str
    description: str
    binary: bool
    higher_is_better: bool
    value: Callable[[EpisodeStats], float | None]
    passed_only: bool = False

    @property
    def direction(self) -> str:
        """``higher is better`` or ``lower is better``, for people."""
        return "higher is better" if self.higher_is_better else "lower is better"


def _per_call(part: Callable[[EpisodeStats], int]) -> Callable[[EpisodeStats], float | None]:
    return lambda s: part(s) / s.calls.calls if s.calls.calls else None


METRICS: dict[str, CompareMetric] = {
    m.name: m
    for m in [
        CompareMetric("success", "episodes passed", True, True, lambda s: float(s.passed)),
        CompareMetric(
            "pass_loose",
            "episodes passed, free-text answers read loosely",
            True,
            True,
            lambda s: float(s.passed_loose),
        ),
        CompareMetric("hallucination", "episodes vetoed", True, False, lambda s: float(s.vetoed)),
        CompareMetric("fraction", "partial-credit score", False, True, lambda s: s.fraction),
        CompareMetric(
            "tool_calls",
            "tool calls per episode (passed in both)",
            False,
            False,
            lambda s: float(s.calls.calls),
            passed_only=True,
        ),
        CompareMetric(
            "efficiency",
            "tool calls / reference calls (passed in both)",
            False,
            False,
            lambda s: s.efficiency,
            passed_only=True,
        ),
        CompareMetric(
            "valid_arguments_rate",
            "calls with valid arguments",
            False,
            True,
            _per_call(lambda s: s.calls.valid_arguments),
        ),
        CompareMetric(
            "redundancy_rate",
            "redundant calls",
            False,
            False,
            _per_call(lambda s: s.calls.redundant),
        ),
        CompareMetric(
            "agent_s",
            "agent seconds per episode (passed in both)",
            False,
            False,
            lambda s: s.agent_s,
            passed_only=True,
        ),
        CompareMetric(
            "tool_s",
            "tool seconds per episode (passed in both)",
            False,
            False,
            lambda s: s.tool_s,
            passed_only=True,
        ),
        CompareMetric(
            "tokens",
            "agent tokens per episode (passed in both)",
            False,
            False,
            lambda s: float(s.tokens),
            passed_only=True,
        ),
        CompareMetric(
            "cost_usd",
            "agent USD per episode (priced, passed in both)",
            False,
            False,
            lambda s: s.cost_usd,
            passed_only=True,
        ),
    ]
}
"""The compared metrics, by name, in table order."""


MIN_BOOTSTRAP_TASKS = 6
"""Fewest paired tasks a bootstrap test is run on: below it the resamples are too few to
mean anything (two tasks whose differences agree in sign give p ~ 0.001), so the row shows
the change with no p-value and the verdict ``n/a``."""


@dataclass(frozen=True)
class MetricChange:
    """One row of the comparison: a metric in A and B, the change and its test.

    ``change`` is ``b - a``; ``verdict`` is ``better``/``worse`` when the change
    is significant (in the metric's direction), ``same`` when not, ``n/a``
    when no pair had a value. ``direction`` says which way is better, in words.
    """

    name: str
    description: str
    test: str
    higher_is_better: bool
    n: int
    a: float | None
    b: float | None
    change: float | None
    p_value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    a_only: int | None = None
    b_only: int | None = None
    significant: bool = False
    verdict: str = "n/a"
    direction: str = ""


def _binary(metric: CompareMetric, pairs: list[Pair], alpha: float) -> MetricChange:
    values = [(metric.value(x), metric.value(y)) for x, y in pairs]
    both = [(bool(x), bool(y)) for x, y in values if x is not None and y is not None]
    n = len(both)
    if not n:
        return _empty(metric, "mcnemar")
    a_only = sum(1 for x, y in both if x and not y)
    b_only = sum(1 for x, y in both if y and not x)
    a, b = sum(x for x, _ in both) / n, sum(y for _, y in both) / n
    p = mcnemar_exact(a_only, b_only)
    return _row(metric, "mcnemar", n, a, b, p, None, None, alpha, a_only=a_only, b_only=b_only)


def _continuous(
    metric: CompareMetric,
    pairs: list[Pair],
    alpha: float,
    resamples: int,
    seed: int,
) -> MetricChange:
    by_task: dict[str, list[tuple[float, float]]] = {}
    for x, y in pairs:
        if metric.passed_only and not (x.passed and y.passed):
            continue
        va, vb = metric.value(x), metric.value(y)
        if va is not None and vb is not None:
            by_task.setdefault(x.task_id, []).append((va, vb))
    if not by_task:
        return _empty(metric, "paired_bootstrap")
    tasks = sorted(by_task)
    a = [sum(v for v, _ in by_task[t]) / len(by_task[t]) for t in tasks]
    b = [sum(v for _, v in by_task[t]) / len(by_task[t]) for t in tasks]
    if len(tasks) < MIN_BOOTSTRAP_TASKS:  # a bootstrap of 2 tasks "finds" p = 0.001
        mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
        return MetricChange(
            name=metric.name,
            description=metric.description,
            test="paired_bootstrap",
            higher_is_better=metric.higher_is_better,
            n=len(tasks),
            a=mean_a,
            b=mean_b,
            change=mean_b - mean_a,
            p_value=None,
            direction=metric.direction,
        )
    diff = paired_bootstrap_diff(a, b, resamples=resamples, seed=seed, confidence=1 - alpha)
    return _row(
        metric,
        "paired_bootstrap",
        len(tasks),
        diff.mean_a,
        diff.mean_b,
        diff.p_value,
        diff.ci_low,
        diff.ci_high,
        alpha,
    )


def _row(
    metric: CompareMetric,
    test: str,
    n: int,
    a: float,
    b: float,
    p: float,
    low: float | None,
    high: float | None,
    alpha: float,
    **extra: Any,
) -> MetricChange:
    change = b - a
    significant = p < alpha and change != 0
    verdict = "same"
    if significant:
        verdict = "better" if (change > 0) == metric.higher_is_better else "worse"
    return MetricChange(
        name=metric.name,
        description=metric.description,
        test=test,
        higher_is_better=metric.higher_is_better,
        n=n,
        a=a,
        b=b,
        change=change,
        p_value=p,
        ci_low=low,
        ci_high=high,
        significant=significant,
        verdict=verdict,
        direction=metric.direction,
        **extra,
    )


def _empty(metric: CompareMetric, test: str) -> MetricChange:
    """The row of a metric no pair had a value for."""
    return MetricChange(
        name=metric.name,
        description=metric.description,
        test=test,
        higher_is_better=metric.higher_is_better,
        n=0,
        a=None,
        b=None,
        change=None,
        p_value=None,
        direction=metric.direction,
    )


def metric_row(
    metric: CompareMetric, pairs: list[Pair], alpha: float, resamples: int, seed: int
) -> MetricChange:
    """The row of one metric over the pairs."""
    if metric.binary:
        return _binary(metric, pairs, alpha)
    return _continuous(metric, pairs, alpha, resamples, seed)
