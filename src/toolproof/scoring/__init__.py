"""Scoring: checks run after the episode, on the harness side, then a graded level.

Map::

    ScoringContext(instance, trajectory, initial/final snapshot, world)
        --@check evaluators (checks/*.py)--> CheckResult[] --levels.grade--> Score
"""

from .base import CheckResult, Evaluator, Level, Score, ScoringContext, check, evaluators
from .checks.custom import check_function
from .levels import grade, reference_calls, weighted_fraction
from .score import score_episode

__all__ = [
    "CheckResult",
    "Evaluator",
    "Level",
    "Score",
    "ScoringContext",
    "check",
    "check_function",
    "evaluators",
    "grade",
    "reference_calls",
    "score_episode",
    "weighted_fraction",
]
