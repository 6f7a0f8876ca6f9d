"""Why episodes failed: the failed episodes of a run grouped by failure mode, and its infra errors.

Used by ``toolproof show --failures``, the HTML report and the viewer. Each
failed episode carries the recorded agent or infra error text first (the
trajectory's ``error``: "connection refused", "agent crashed: ..."), then the
messages of its failing checks, since a check message ("answer does not state
82") says what was missing, not why. Infra-error episodes are not scored; they
are listed apart, and a run with any gets a banner (:func:`infra_banner`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from toolproof.results import EpisodeRecord

UNCLASSIFIED = "unclassified"
"""The group of failed episodes recorded without a failure mode (older runs)."""
INFRA_ERROR = "infra_error"
"""The group of infra-error episodes (not scored, kept apart from the failure modes)."""
MAX_ERROR = 500
"""Characters of a recorded error kept in a listing (the full text stays in the run)."""


def _clip(text: str, limit: int = MAX_ERROR) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def recorded_error(record: EpisodeRecord) -> str | None:
    """The agent or infra error text recorded for an episode, if any.

    The trajectory's ``error`` when set, else the last failed attempt's error
    (``EpisodeRecord.infra_errors``) for an infra-error episode.
    """
    error = record.trajectory.error
    if not error and record.infra_error and record.infra_errors:
        error = record.infra_errors[-1]
    return _clip(error) if error else None


@dataclass(frozen=True)
class FailedEpisode:
    """One failed (or infra-error) episode, as listed under its failure mode.

    Attributes:
        key: ``task_id#epoch``.
        task: Task id.
        epoch: Epoch.
        level: Graded level (partial or fail).
        termination: How the episode ended.
        step: Step where it went wrong, when known.
        check: Name of the first failing check, if any.
        detail: The recorded error when there is one, else that check's detail.
        error: The recorded agent or infra error (:func:`recorded_error`).
        checks: ``name: detail`` of every failing check, vetoes first.
        attempts: Attempts made (1 + infra retries).
    """

    key: str
    task: str
    epoch: int
    level: str
    termination: str
    step: int | None
    check: str | None
    detail: str
    error: str | None = None
    checks: tuple[str, ...] = ()
    attempts: int = 1


def failed_episode(record: EpisodeRecord) -> FailedEpisode:
    """The listing entry of a failed episode: its recorded error first, then its checks."""
    score = record.score
    failing = [c for c in score.checks if c.veto] + [
        c for c in score.checks if not c.passed and not c.veto
    ]
    first = failing[0] if failing else None
    error = recorded_error(record)
    detail = error or (first.detail if first is not None else "")
    return FailedEpisode(
        key=record.key,
        task=record.task.id,
        epoch=record.epoch,
        level=score.level.value,
        termination=score.termination.value,
        step=score.failure_step,
        check=None if first is None else first.name,
        detail=_clip(detail),
        error=error,
        checks=tuple(_clip(f"{c.name}: {c.detail}" if c.detail else c.name) for c in failing),
        attempts=record.attempts,
    )


def _sorted(groups: dict[str, list[FailedEpisode]]) -> dict[str, list[FailedEpisode]]:
    for entries in groups.values():
        entries.sort(key=lambda e: (e.task, e.epoch))
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


def failures_by_mode(records: Iterable[EpisodeRecord]) -> dict[str, list[FailedEpisode]]:
    """Failed scored episodes (infra errors left out) by failure mode, biggest group first.

    Within a group, episodes are in task and epoch order.
    """
    return failure_report(records).groups


@dataclass
class FailureReport:
    """Every episode of a run that did not pass, by why.

    Attributes:
        episodes: Episodes recorded.
        scored: Episodes scored (not infra errors).
        groups: Failed scored episodes by failure mode, biggest group first.
        infra: Infra-error episodes (not scored), in task and epoch order.
    """

    episodes: int = 0
    scored: int = 0
    groups: dict[str, list[FailedEpisode]] = field(default_factory=dict)
    infra: list[FailedEpisode] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """Failed scored episodes."""
        return sum(len(v) for v in self.groups.values())

    @property
    def first_infra_error(self) -> str | None:
        """The first infra-error episode's recorded error (task, epoch order)."""
        return next((e.error for e in self.infra if e.error), None)

    def banner(self) -> str | None:
        """The infra-error notice of the run, or None when it had none (:func:`infra_banner`)."""
        return infra_banner(len(self.infra), self.episodes, self.first_infra_error)


def failure_report(records: Iterable[EpisodeRecord]) -> FailureReport:
    """The :class:`FailureReport` of a run's records (one pass)."""
    report = FailureReport()
    groups: dict[str, list[FailedEpisode]] = {}
    for record in records:
        report.episodes += 1
        if record.infra_error:
            report.infra.append(failed_episode(record))
            continue
        report.scored += 1
        if record.score.passed:
            continue
        mode = record.score.failure_mode or UNCLASSIFIED
        groups.setdefault(mode, []).append(failed_episode(record))
    report.groups = _sorted(groups)
    report.infra.sort(key=lambda e: (e.task, e.epoch))
    return report


def infra_banner(infra: int, episodes: int, first_error: str | None) -> str | None:
    """``N of M episodes were infrastructure errors: not scored; first error: ...``.

    None when ``infra`` is 0. Shown in the console summary, the report and the
    viewer, so a run of infra errors never reads as an agent scoring 0%.
    """
    if not infra:
        return None
    text = f"{infra} of {episodes} episodes were infrastructure errors: not scored"
    if infra == episodes:
        text += " (nothing was scored)"
    if first_error:
        text += f"; first error: {_clip(first_error, 300)}"
    return text
