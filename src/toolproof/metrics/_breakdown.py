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


Facts = tuple[str, str, int, str, tuple[str, ...], bool]
"""What decides an episode's groups: category, type, difficulty, domain, tags, judged."""


def _facts(stats: EpisodeStats) -> Facts:
    return (stats.category, stats.type, stats.difficulty, stats.domain, stats.tags, stats.judged)


def group_keys(stats: EpisodeStats) -> Iterator[tuple[str, str]]:
    """``(dimension, group)`` pairs an episode belongs to."""
    return _groups(_facts(stats))


def _groups(facts: Facts) -> Iterator[tuple[str, str]]:
    category, type_, difficulty, domain, tags, judged = facts
    yield "category", category
    yield "type", type_
    yield "difficulty", str(difficulty)
    yield "domain", domain
    for tag in dict.fromkeys(tags):
        yield "tag", tag
    yield "scoring", "judged" if judged else "objective"


class Breakdown:
    """One :class:`Aggregate` per group of every dimension.

    An episode is counted once, in the aggregate of its :data:`Facts` (every episode of a
    task lands in the same groups, and a run has few distinct facts); the groups are made
    from those when the block is asked for (:meth:`Aggregate.merge`). Counting each
    episode in each of its six or more groups as it came was most of the cost of
    counting it.
    """

    def __init__(self) -> None:
        self._by_facts: dict[Facts, Aggregate] = {}

    def add(self, stats: EpisodeStats) -> None:
        """Count an episode (in the aggregate of its facts)."""
        facts = _facts(stats)
        aggregate = self._by_facts.get(facts)
        if aggregate is None:
            aggregate = self._by_facts[facts] = Aggregate(capped=True)
        aggregate.add(stats)

    def flush(self) -> None:
        """Count every aggregate's pending values in its sketches (see ``Aggregate.flush``)."""
        for aggregate in self._by_facts.values():
            aggregate.flush()

    def members(self) -> dict[str, dict[str, list[Facts]]]:
        """``{dimension: {group: the facts whose episodes it holds}}`` (facts sorted)."""
        members: dict[str, dict[str, list[Facts]]] = {d: {} for d in DIMENSIONS}
        for facts in sorted(self._by_facts):  # the same merge order whatever came first
            for dimension, key in _groups(facts):
                members[dimension].setdefault(key, []).append(facts)
        return members

    def group(self, facts: list[Facts]) -> Aggregate:
        """One group's episodes: the aggregates of ``facts`` merged into a new one."""
        group = Aggregate(capped=True)
        for one in facts:
            group.merge(self._by_facts[one])
        return group

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{dimension: {group: metric block}}``, groups sorted by name; each group is
        merged, turned into its block and let go before the next (memory: one group's)."""
        return {
            dimension: {key: self.group(groups[key]).to_dict() for key in sorted(groups)}
            for dimension, groups in self.members().items()
        }
