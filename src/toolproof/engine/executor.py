"""Executors run one episode job each; the runner decides how many are in flight.

A job is plain data (task id, epoch) so that remote executors can ship it; the
worker that runs it holds the loaded suite and agent factory, made once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from toolproof.agents import AgentFactory, build_agent, parse_agent_spec
from toolproof.results import EpisodeRecord, TaskFacts
from toolproof.scoring import reference_calls
from toolproof.spec import Suite, TaskInstance, load_suite, render
from toolproof.trajectory import Termination
from toolproof.worlds import BlobStore

from .config import RunConfig
from .episode import EpisodeOptions, run_episode


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run."""

    task_id: str
    epoch: int

    @property
    def key(self) -> str:
        """``task_id#epoch``."""
        return f"{self.task_id}#{self.epoch}"


class Executor(Protocol):
    """Runs one job and returns its record. One required method."""

    async def submit(self, job: EpisodeJob) -> EpisodeRecord:
        """Run the job to its end (retrying infra errors) and return the record."""
        ...


class Worker:
    """Everything needed to run jobs of one run: the suite, the agent factory, the options."""

    def __init__(self, config: RunConfig, run_dir: Path | None, suite: Suite | None = None) -> None:
        self.config = config
        self.suite = suite or load_suite(config.suite)
        self.factory: AgentFactory = build_agent(
            parse_agent_spec(config.agent, config.agent_options)
        )
        blobs = BlobStore(run_dir / "blobs") if run_dir is not None and config.snapshots else None
        self.options = EpisodeOptions(agent_label=config.agent, blobs=blobs)

    def instance(self, job: EpisodeJob) -> TaskInstance:
        """Render the job's task instance."""
        suite = self.suite
        return render(
            suite.task(job.task_id),
            suite=suite.name,
            suite_seed=self.config.effective_seed(suite),
            epoch=job.epoch,
            limits=suite.config.limits,
            system_prompt=self.config.system_prompt or suite.config.system_prompt,
        )

    async def run(self, job: EpisodeJob) -> EpisodeRecord:
        """Run a job, retrying while it ends in infra_error (up to config.retries times)."""
        instance = self.instance(job)
        options = EpisodeOptions(
            agent_label=self.options.agent_label,
            blobs=self.options.blobs,
            fixtures_base=self.suite.task_file(job.task_id).parent,
        )
        errors: list[str] = []
        for attempt in range(1, self.config.retries + 2):
            trajectory, score = await run_episode(instance, self.factory, options)
            if (
                trajectory.termination is not Termination.INFRA_ERROR
                or attempt > self.config.retries
            ):
                break
            errors.append(trajectory.error or "infra_error")
        task = instance.task
        ref_tools = sorted(
            {
                c.tool
                for item in task.solution.calls
                for c in (item if isinstance(item, list) else [item])
            }
        )
        facts = TaskFacts(
            id=task.id,
            type=task.type.value,
            category=task.category.value,
            difficulty=task.difficulty,
            domain=task.domain,
            tags=task.tags,
            reference_calls=reference_calls(instance),
            tools=[t if isinstance(t, str) else t.name for t in task.tools],
            reference_tools=ref_tools,
            judged=any(str(c.kind) == "judge" for c in task.success),
        )
        return EpisodeRecord(
            key=job.key,
            task=facts,
            epoch=job.epoch,
            seed=instance.seed,
            agent=self.config.agent,
            attempts=len(errors) + 1,
            infra_errors=errors,
            score=score,
            trajectory=trajectory,
        )


class LocalExecutor:
    """Runs jobs in this process's event loop (episodes mostly wait on models)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    async def submit(self, job: EpisodeJob) -> EpisodeRecord:
        """Run the job here."""
        return await self.worker.run(job)
