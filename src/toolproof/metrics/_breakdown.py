"""Breakdown of the metric block by category, type, difficulty, domain, tag and scoring.

Each episode lands in one group per dimension (in one group per tag for
``tag``, none when it has no tags); ``scoring`` splits tasks graded by an LLM
judge (``judged``) from objectively scored ones (``objective``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._aggregate import Aggregate
from ._episode import EpisodeStats

DIMENSIONS = ("category", "type", "difficulty", "domain", "tag", "scoring")
"""The breakdown dimensions, as named in summary.json."""


def group_keys(stats: EpisodeStats) -> Iterator[tuple[str, str]]:
    """``(dimension, group)`` pairs an episode belongs to."""
    yield "category", stats.category
    yield "type", stats.type
    yield "difficulty", str(stats.difficulty)
    yield "domain", stats.domain
    for tag in dict.fromkeys(stats.tags):
        yield "tag", tag
    yield "scoring", "judged" if stats.judged else "objective"


class Breakdown:
    """One :class:`Aggregate` per group of every dimension."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Aggregate]] = {d: {} for d in DIMENSIONS}

    def add(self, stats: EpisodeStats) -> None:
        """Count an episode in each of its groups."""
        for dimension, key in group_keys(stats):
            group = self.groups[dimension].get(key)
            if group is None:
                group = self.groups[dimension][key] = Aggregate(capped=True)
            group.add(stats)

    def flush(self) -> None:
        """Count every group's pending values in its sketches (see ``Aggregate.flush``)."""
        for groups in self.groups.values():
            for group in groups.values():
                group.flush()

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{dimension: {group: metric block}}``, groups sorted by name."""
        return {
            dimension: {key: groups[key].to_dict() for key in sorted(groups)}
            for dimension, groups in self.groups.items()
        }
