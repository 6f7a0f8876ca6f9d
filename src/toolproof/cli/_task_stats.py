"""Difficulty statistics of tasks: reference steps, tools offered, labelled traps.

``toolproof list --suite NAME`` prints them per task and per tier (difficulty) and
category; ``toolproof check-task`` prints one task's line. The numbers come from the
task as written and as rendered for epoch 0 (a reference call with a ``when`` counts
on the seeds where it is made), so they cost no episode.

A trap is labelled by a tag ``trap:NAME`` (docs/writing-tasks.md lists the names the
built-in suites use).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from toolproof.spec import ANSWER_TOOL, SpecError, Suite, Task, TaskInstance, render
from toolproof.tools import resolve_tools

TRAP_PREFIX = "trap:"
"""Tags that label a trap of a task: ``trap:near-duplicate-tool``."""


@dataclass(frozen=True)
class TaskStats:
    """What one task asks of an agent, counted."""

    task_id: str
    difficulty: int
    category: str
    reference_calls: int
    reference_turns: int
    tools_offered: int
    tools_used: int
    traps: tuple[str, ...]


def task_stats(task: Task, instance: TaskInstance | None = None) -> TaskStats:
    """Count one task (``instance``: a rendered epoch, whose calls are the ones made)."""
    calls = (instance.task if instance is not None else task).solution.calls
    turns = [item if isinstance(item, list) else [item] for item in calls]
    try:
        # submit_answer (a typed answer's tool) is how the agent answers, not a tool to pick
        offered = sum(1 for t in resolve_tools(task) if t.schema.name != ANSWER_TOOL)
    except SpecError:  # an unknown tool: validate reports it; count what is named
        offered = len(task.tools)
    return TaskStats(
        task_id=task.id,
        difficulty=task.difficulty,
        category=task.category.value,
        reference_calls=sum(len(t) for t in turns),
        reference_turns=len(turns),
        tools_offered=offered,
        tools_used=len({c.tool for t in turns for c in t}),
        traps=tuple(t[len(TRAP_PREFIX) :] for t in task.tags if t.startswith(TRAP_PREFIX)),
    )


def suite_stats(suite: Suite) -> list[TaskStats]:
    """Every task of a suite, counted on its epoch-0 rendering."""
    out = []
    for task in suite.tasks:
        try:
            instance: TaskInstance | None = render(
                task,
                suite=suite.name,
                suite_seed=suite.config.seed,
                epoch=0,
                limits=suite.config.limits,
                system_prompt=suite.config.system_prompt,
            )
        except SpecError:
            instance = None
        out.append(task_stats(task, instance))
    return out


def _spread(values: list[int]) -> str:
    """``median (min-max)``."""
    if not values:
        return "-"
    median = statistics.median(values)
    shown = f"{median:g}"
    return shown if min(values) == max(values) else f"{shown} ({min(values)}-{max(values)})"


def group_lines(stats: Iterable[TaskStats], field: str) -> list[str]:
    """One line per value of ``field`` (``difficulty`` or ``category``): how many tasks,
    reference calls and tools offered (median, range) and traps per task (mean)."""
    groups: dict[str, list[TaskStats]] = {}
    for s in stats:
        groups.setdefault(str(getattr(s, field)), []).append(s)
    lines = []
    for key in sorted(groups):
        rows = groups[key]
        traps = sum(len(s.traps) for s in rows) / len(rows)
        calls = _spread([s.reference_calls for s in rows])
        offered = _spread([s.tools_offered for s in rows])
        lines.append(
            f"{key}: {len(rows)} tasks, calls {calls}, tools {offered}, traps/task {traps:.1f}"
        )
    return lines


def trap_counts(stats: Iterable[TaskStats]) -> dict[str, int]:
    """How many tasks carry each labelled trap."""
    counts: dict[str, int] = {}
    for s in stats:
        for trap in s.traps:
            counts[trap] = counts.get(trap, 0) + 1
    return dict(sorted(counts.items()))
