"""The run gate: a run that measured nothing, or too little, must not exit 0.

An all-infra-error run used to exit 0 with "success 0.0% (0/0)", and CI
would take it for a result. The gate turns these into exit 3 with the cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._common import EXIT_INCOMPLETE, EXIT_OK, resume_command

DEFAULT_MAX_INFRA = 0.05
"""Default largest share of finished episodes that may be infra errors."""


@dataclass(frozen=True)
class Verdict:
    """What the run's exit status is, and why."""

    code: int
    reason: str | None = None
    cause: str | None = None
    """``incomplete``, ``no_scored_episodes``, ``infra_errors`` (None when it passed)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for the JSON ``end`` event)."""
        return {"exit_code": self.code, "cause": self.cause, "reason": self.reason}


def first_infra_error(run_dir: Path) -> str | None:
    """The error text of the first stored infra-error episode (None when there is none)."""
    from toolproof.results import RunReader

    with RunReader(run_dir) as reader:
        rows = reader.rows(where="termination = ?", params=("infra_error",), order="seq", limit=1)
        if not rows:
            return None
        record = reader.record(str(rows[0]["key"]))
    if record is None:
        return None
    errors = [record.trajectory.error, *record.infra_errors]
    return next((e for e in errors if e), "infra_error")


def judge(summary: dict[str, Any], run_dir: Path, *, max_infra: float) -> Verdict:
    """The exit status of a finished or stopped run.

    Args:
        summary: The run's summary (``summary.json``).
        run_dir: Where the run is (for the first infra error's text).
        max_infra: The largest allowed share of finished episodes that are infra errors.
    """
    episodes = summary.get("episodes", {})
    planned = int(episodes.get("planned", 0))
    finished = int(episodes.get("finished", 0))
    infra = int(episodes.get("infra_errors", 0))
    scored = int(episodes.get("scored", finished - infra))
    if not episodes.get("complete", True):
        why = f" ({episodes['stop_reason']})" if episodes.get("stop_reason") else ""
        return Verdict(
            EXIT_INCOMPLETE,
            f"INCOMPLETE: {finished} of {planned} episodes finished{why}; the summary covers "
            f"only those. Continue with: {resume_command(run_dir)}",
            "incomplete",
        )

    def first() -> str:
        text = first_infra_error(run_dir)
        return f"; the first: {text}" if text else ""

    if scored <= 0:
        return Verdict(
            EXIT_INCOMPLETE,
            f"no scored episodes: {infra} of {finished} finished episodes were infra errors "
            f"(the harness or the agent's service failed, not the agent){first()}. "
            "The run measured nothing; fix the cause and run again.",
            "no_scored_episodes",
        )
    share = infra / finished if finished else 0.0
    if share > max_infra:
        return Verdict(
            EXIT_INCOMPLETE,
            f"too many infra errors: {infra} of {finished} episodes ({100 * share:.1f}%) exceed "
            f"the limit of {100 * max_infra:.1f}% (--max-infra-errors {max_infra:g}){first()}.",
            "infra_errors",
        )
    return Verdict(EXIT_OK)
