"""Scoring: checks run after the episode, on the harness side, then a graded level.

Map::

    ScoringContext(instance, trajectory, initial/final snapshot, world)
        --@check evaluators (checks/*.py)--> CheckResult[] --levels.grade--> Score

    roles.py: progress vs guard checks (guards only take credit away);
    base.py: the registry (``@check``), below checks/, each built-in kind's module
    imported when a check of that kind first runs; registry.py: ``evaluators()``, above
    them (it loads every built-in kind), so scoring has no import cycle;
    check_levels / check_custom_imports: what ``toolproof validate`` asks of scoring.
"""

from ._effects import ReferenceEffect
from .base import CheckResult, Evaluator, Level, Score, ScoringContext, check
from .checks.custom import check_custom_imports, check_function
from .collateral import changed_nothing, needs_reference
from .levels import grade, reference_calls, weighted_fraction
from .registry import evaluators, kind_names
from .roles import Role, check_levels, static_role
from .score import score_episode

__all__ = [
    "CheckResult",
    "Evaluator",
    "Level",
    "ReferenceEffect",
    "Role",
    "Score",
    "ScoringContext",
    "changed_nothing",
    "check",
    "check_custom_imports",
    "check_function",
    "check_levels",
    "evaluators",
    "grade",
    "kind_names",
    "needs_reference",
    "reference_calls",
    "score_episode",
    "static_role",
    "weighted_fraction",
]
