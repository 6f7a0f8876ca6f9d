"""A run's jobs and the worker that runs them: what every executor shares.

``EpisodeJob`` is plain data (task id, epoch) so that remote executors can ship it; the
:class:`Worker` that runs it holds the loaded suite and agent factory, made once per
process; :func:`share_out` splits a run's limits between worker processes or Ray actors.
The executors (``executor.py``: the registry and the in-process one; ``processes.py``:
worker processes; ``ray_executor.py``) all import this module and none imports another,
so there is no import circle between them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

from toolproof.agents import AgentFactory, build_agent, parse_agent_spec
from toolproof.results import EpisodeRecord, TaskFacts
from toolproof.sandbox import SandboxError, get_backend
from toolproof.scoring import Level, Score, reference_calls
from toolproof.spec import (
    SpecError,
    Suite,
    Task,
    TaskInstance,
    effective_sandbox,
    load_suite,
    render,
)
from toolproof.tools import resolve_tools
from toolproof.tools.base import offers_commands
from toolproof.tools.context import command_backend
from toolproof.tools.pool import ToolPool
from toolproof.trajectory import Termination, Trajectory
from toolproof.worlds import BlobStore

from ._placement import HARNESS_LOOP_MARK, withdrawable
from .config import RunConfig
from .episode import EpisodeOptions, run_episode
from .side_models import SideModels

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run."""

    task_id: str
    epoch: int

    @property
    def key(self) -> str:
        """``task_id#epoch``."""
        return f"{self.task_id}#{self.epoch}"


def _slots(limit: int | None) -> asyncio.Semaphore | None:
    return asyncio.Semaphore(limit) if limit is not None else None


def _part(limit: int | None, parts: int, part: int) -> int | None:
    """Part ``part`` of ``limit`` split into ``parts`` whole parts that add up to it."""
    if limit is None:
        return None
    return limit // parts + (1 if part < limit % parts else 0)


@dataclass(frozen=True)
class Share:
    """One worker process's part of a run: its config and the weight of its part."""

    config: RunConfig
    """The run's config with this process's part of ``max_model_calls`` and ``max_sandboxes``."""
    weight: int
    """Its part of the tightest limit (1 without limits): jobs go to it in that proportion."""


def share_out(config: RunConfig, wanted: int) -> list[Share]:
    """Split a run between at most ``wanted`` worker processes (``--workers``, Ray actors).

    ``--max-model-calls`` and ``--max-sandboxes`` bound the whole run, so each process gets
    a part of them, the parts adding up to the limit, and there are no more processes than
    the smallest limit (``--max-sandboxes 1``: one).
    """
    limits = (config.max_model_calls, config.max_sandboxes)
    size = max(1, min([wanted, *(n for n in limits if n is not None)]))
    shares = []
    for slot in range(size):
        model_calls, sandboxes = (_part(n, size, slot) for n in limits)
        update = {"max_model_calls": model_calls, "max_sandboxes": sandboxes}
        part = config.model_copy(update=update)
        weight = min([n for n in (model_calls, sandboxes) if n is not None], default=1)
        shares.append(Share(part, weight))
    return shares


class Worker:
    """Everything needed to run jobs of one run: the suite, the agent factory, the options."""

    def __init__(self, config: RunConfig, run_dir: Path | None, suite: Suite | None = None) -> None:
        self.config = config
        self.suite = suite or load_suite(
            config.suite, allow_drift=config.allow_drift, tasks=config.tasks
        )
        options = config.agent_options
        chosen = config.placement is not None and config.placement.loop == "harness"
        if chosen and "loop" not in options:  # chosen by the run (_placement), not asked for
            options = {**options, "loop": "harness"}  # its guard: 1 s, as when asked for
        self.factory: AgentFactory = build_agent(parse_agent_spec(config.agent, options))
        self._chosen_loop: AgentFactory | None = None
        if chosen:
            self.factory = self._chosen_loop = withdrawable(
                self.factory,
                lambda: self.factory is not self._chosen_loop,
                self._back_to_own_thread,
            )
        blobs = BlobStore(run_dir / "blobs") if run_dir is not None and config.snapshots else None
        self.options = EpisodeOptions(
            agent_label=config.agent,
            blobs=blobs,
            model_slots=_slots(config.max_model_calls),
            tool_slots=ToolPool(config.max_sandboxes),
            sandbox=self.suite.config.sandbox,
            sandbox_backend=config.sandbox,
            commands_on_host=config.run_commands_on_host,
            policy=self.suite.config.policy,
            env_cache=Path(config.env_cache) if config.env_cache else None,
            allow_drift=config.allow_drift,
            side=SideModels.from_config(config.user_model, config.judge_model, config.side_models),
        )
        self._tasks: dict[str, Task] | None = None
        self._isolated: dict[tuple[str, ...], bool] = {}

    def instance(self, job: EpisodeJob) -> TaskInstance:
        """Render the job's task instance."""
        suite = self.suite
        if self._tasks is None:  # the suite's tasks by id: no linear search per episode
            self._tasks = {task.id: task for task in suite.tasks}
        task = self._tasks.get(job.task_id)
        return render(
            task if task is not None else suite.task(job.task_id),  # the KeyError's message
            suite=suite.name,
            suite_seed=self.config.effective_seed(suite),
            epoch=job.epoch,
            limits=suite.config.limits,
            system_prompt=self.config.system_prompt or suite.config.system_prompt,
        )

    async def run(self, job: EpisodeJob) -> EpisodeRecord:
        """Run a job, retrying while it ends in infra_error (up to config.retries times)."""
        instance = self.instance(job)
        options = dataclasses.replace(
            self.options, fixtures_base=self.suite.task_file(job.task_id).parent
        )
        errors: list[str] = []
        attempt = 1
        while True:
            factory = self.factory
            trajectory, score = await run_episode(instance, factory, options)
            if factory is self._chosen_loop and _left_harness_loop(trajectory):
                self._back_to_own_thread()
                continue  # the episode again, where the agent would have run by default
            if (
                trajectory.termination is not Termination.INFRA_ERROR
                or attempt > self.config.retries
            ):
                break
            errors.append(trajectory.error or "infra_error")
            attempt += 1
        return EpisodeRecord(
            key=job.key,
            task=self.facts(instance),
            epoch=job.epoch,
            seed=instance.seed,
            agent=self.config.agent,
            attempts=len(errors) + 1,
            infra_errors=errors,
            score=score,
            trajectory=trajectory,
            isolated=self.isolated(instance),
        )

    def _back_to_own_thread(self) -> None:
        """The agent the run put on the harness's loop blocked it or is not async: build it
        as its options say (its own thread) for this episode and the rest of the run."""
        if self.factory is self._chosen_loop:
            config = self.config
            self.factory = build_agent(parse_agent_spec(config.agent, config.agent_options))
            _log.warning(
                "the agent %s cannot run on the harness's event loop (it blocks or is not "
                "async): back on its own thread for the rest of the run",
                config.agent,
            )

    def isolated(self, instance: TaskInstance) -> bool:
        """False when the episode's commands ran on the host without isolation (process)."""
        entries = instance.task.tools
        named = tuple(e for e in entries if isinstance(e, str))
        if len(named) == len(entries) and instance.task.sandbox is None:
            known = self._isolated.get(named)  # the same tool names, the same answer
            if known is None:
                known = self._isolated[named] = self._isolation_of(instance)
            return known
        return self._isolation_of(instance)

    def _isolation_of(self, instance: TaskInstance) -> bool:
        try:
            if not offers_commands(resolve_tools(instance.task)):
                return True
            settings = effective_sandbox(
                self.options.sandbox_backend,
                self.options.sandbox,
                instance.task.sandbox,
                commands_on_host=self.options.commands_on_host,
            )
            return get_backend(command_backend(settings)).isolated
        except (SpecError, SandboxError):  # no command could run at all
            return True

    def facts(self, instance: TaskInstance) -> TaskFacts:
        """What metrics need to know about the task of an episode."""
        task = instance.task
        ref_tools = sorted(
            {
                c.tool
                for item in task.solution.calls
                for c in (item if isinstance(item, list) else [item])
            }
        )
        return TaskFacts(
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

    def infra_failure(self, job: EpisodeJob, errors: list[str]) -> EpisodeRecord:
        """The record of an episode that could not be run at all (e.g. its worker died)."""
        return self.unrun(job, errors, Termination.INFRA_ERROR, errors[-1] if errors else None)

    def unrun(
        self, job: EpisodeJob, errors: list[str], termination: Termination, error: str | None
    ) -> EpisodeRecord:
        """The record of an episode that ended with no trajectory to show, as
        ``termination`` with ``error`` (``faults.worker_death_outcome``: its worker process
        died); ``errors`` are the infra errors of its earlier attempts."""
        instance = self.instance(job)
        trajectory = Trajectory(
            episode_id=job.key,
            task_id=job.task_id,
            epoch=job.epoch,
            seed=instance.seed,
            agent=self.config.agent,
            prompt=[],
            termination=termination,
            error=error or termination.value,
        )
        score = Score(
            passed=False,
            level=Level.FAIL,
            fraction=0.0,
            checks=[],
            termination=termination,
            tool_calls=0,
            failure_mode=None if termination is Termination.INFRA_ERROR else termination.value,
        )
        return EpisodeRecord(
            key=job.key,
            task=self.facts(instance),
            epoch=job.epoch,
            seed=instance.seed,
            agent=self.config.agent,
            attempts=len(errors) + (termination is not Termination.INFRA_ERROR),
            infra_errors=errors,
            score=score,
            trajectory=trajectory,
        )


def _left_harness_loop(trajectory: Trajectory) -> bool:
    """An agent error of the harness's loop's guard (every one names the option)."""
    return trajectory.termination is Termination.AGENT_ERROR and HARNESS_LOOP_MARK in (
        trajectory.error or ""
    )
