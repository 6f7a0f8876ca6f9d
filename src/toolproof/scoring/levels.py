"""From check results to a level: perfect, acceptable, partial or fail.

Defaults (a task's ``levels`` may override each rule):

* perfect: every check passes, the episode completed, and the agent made at
  most ``r + ceil(r / 2)`` tool calls, ``r`` being the reference solution's calls;
* acceptable: every check passes and the episode completed;
* partial: at least half of the check weight passes;
* fail: anything else, and always when a check vetoed (forbidden output or action).

An episode *passes* at perfect or acceptable.
"""

from __future__ import annotations

import math

from toolproof.spec import LevelRule, TaskInstance
from toolproof.trajectory import Termination

from .base import CheckResult, Level


def reference_calls(instance: TaskInstance) -> int:
    """How many tool calls the reference solution makes."""
    return sum(len(i) if isinstance(i, list) else 1 for i in instance.task.solution.calls)


def weighted_fraction(results: list[CheckResult]) -> float:
    """Weighted share of check score; 0 when any check vetoed."""
    if any(r.veto for r in results):
        return 0.0
    total = sum(r.weight for r in results)
    if total == 0:
        return 1.0 if all(r.passed for r in results) else 0.0
    return sum(r.weight * r.score for r in results) / total


def _meets(
    rule: LevelRule, results: list[CheckResult], fraction: float, calls: int, steps: int
) -> bool:
    by_name = {r.name: r for r in results}
    if rule.checks == "all":
        if not all(r.passed for r in results):
            return False
    elif not all(by_name.get(n) is not None and by_name[n].passed for n in rule.checks):
        return False
    if rule.min_fraction is not None and fraction < rule.min_fraction:
        return False
    if rule.max_tool_calls is not None and calls > rule.max_tool_calls:
        return False
    return rule.max_steps is None or steps <= rule.max_steps


def grade(
    instance: TaskInstance,
    results: list[CheckResult],
    termination: Termination,
    tool_calls: int,
    steps: int,
) -> tuple[Level, float]:
    """The level and weighted fraction of an episode."""
    fraction = weighted_fraction(results)
    if any(r.veto for r in results):
        return Level.FAIL, fraction
    levels = instance.task.levels
    ref = reference_calls(instance)
    perfect = levels.perfect or LevelRule(max_tool_calls=ref + math.ceil(ref / 2))
    acceptable = levels.acceptable or LevelRule()
    partial = levels.partial or LevelRule(checks=[], min_fraction=0.5)
    completed = termination is Termination.COMPLETED
    if completed and _meets(perfect, results, fraction, tool_calls, steps):
        return Level.PERFECT, fraction
    if completed and _meets(acceptable, results, fraction, tool_calls, steps):
        return Level.ACCEPTABLE, fraction
    if _meets(partial, results, fraction, tool_calls, steps) and fraction > 0:
        return Level.PARTIAL, fraction
    return Level.FAIL, fraction
