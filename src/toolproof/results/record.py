"""One finished episode as stored: task facts, the score and the trajectory."""

from __future__ import annotations

from pydantic import BaseModel, Field

from toolproof.scoring import Score
from toolproof.trajectory import Trajectory


class TaskFacts(BaseModel):
    """What metrics break results down by."""

    id: str
    type: str
    category: str
    difficulty: int
    domain: str
    tags: list[str] = Field(default_factory=list)
    reference_calls: int = 0
    tools: list[str] = Field(default_factory=list, description="Names of the tools offered.")
    reference_tools: list[str] = Field(
        default_factory=list, description="Names of the tools the reference solution uses."
    )
    judged: bool = False


class EpisodeRecord(BaseModel):
    """A finished episode: the unit the run store appends."""

    key: str = Field(description="task_id#epoch")
    task: TaskFacts
    epoch: int
    seed: int
    agent: str
    attempts: int = Field(1, description="1 + infra-error retries.")
    infra_errors: list[str] = Field(default_factory=list, description="Errors of failed attempts.")
    score: Score
    trajectory: Trajectory
    isolated: bool = Field(True, description="False when commands ran without a sandbox.")

    @property
    def infra_error(self) -> bool:
        """Whether the episode ended in an infra error after all retries."""
        return self.score.termination == "infra_error"
