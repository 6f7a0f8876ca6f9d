"""The failed episodes of a run, grouped by primary failure mode (``toolproof show --failures``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from toolproof.results import EpisodeRecord

UNCLASSIFIED = "unclassified"
"""The group of failed episodes recorded without a failure mode (older runs)."""


@dataclass(frozen=True)
class FailedEpisode:
    """One failed episode, as listed under its failure mode.

    Attributes:
        key: ``task_id#epoch``.
        task: Task id.
        epoch: Epoch.
        level: Graded level (partial or fail).
        termination: How the episode ended.
        step: Step where it went wrong, when known.
        check: Name of the first failing check, if any.
        detail: That check's detail, else the episode's error.
    """

    key: str
    task: str
    epoch: int
    level: str
    termination: str
    step: int | None
    check: str | None
    detail: str


def failed_episode(record: EpisodeRecord) -> FailedEpisode:
    """The listing entry of a failed episode."""
    score = record.score
    failing = next((c for c in score.checks if c.veto), None) or next(
        (c for c in score.checks if not c.passed), None
    )
    detail = failing.detail if failing is not None else (record.trajectory.error or "")
    return FailedEpisode(
        key=record.key,
        task=record.task.id,
        epoch=record.epoch,
        level=score.level.value,
        termination=score.termination.value,
        step=score.failure_step,
        check=None if failing is None else failing.name,
        detail=detail,
    )


def failures_by_mode(records: Iterable[EpisodeRecord]) -> dict[str, list[FailedEpisode]]:
    """Failed episodes (infra errors left out) by failure mode, biggest group first.

    Within a group, episodes are in task and epoch order.
    """
    groups: dict[str, list[FailedEpisode]] = {}
    for record in records:
        if record.score.passed or record.infra_error:
            continue
        mode = record.score.failure_mode or UNCLASSIFIED
        groups.setdefault(mode, []).append(failed_episode(record))
    for entries in groups.values():
        entries.sort(key=lambda e: (e.task, e.epoch))
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))
