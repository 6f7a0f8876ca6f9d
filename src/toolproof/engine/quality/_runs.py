"""The gate's episodes: every agent it judges, run in process by the engine's own worker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from toolproof.results import EpisodeRecord
from toolproof.spec import Suite

from ..config import RunConfig
from ..executor import EpisodeJob, Worker
from ._rules import BLIND, BLIND_CLAIM, FLAWED, ORACLE_EPOCHS, OTHER_EPOCHS


@dataclass
class GateRecords:
    """Every record the gate judges, by agent then task id."""

    by_agent: dict[str, dict[str, list[EpisodeRecord]]] = field(default_factory=dict)

    def of(self, agent: str, task_id: str) -> list[EpisodeRecord]:
        """The records of one agent on one task (empty when it was not run)."""
        return self.by_agent.get(agent, {}).get(task_id, [])


def run_agent(
    suite: Suite,
    agent: str,
    epochs: int,
    task_ids: Iterable[str] | None = None,
    *,
    parallel: int = 8,
    commands_on_host: bool = False,
    sandbox: str | None = None,
    options: dict[str, str] | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Run one agent over tasks of a suite for ``epochs`` seeds, in process; records by task.

    Args:
        suite: The loaded suite.
        agent: The agent spec (``oracle``, ``noop``, ``random``, a flawed agent).
        epochs: How many epochs (seeds) per task.
        task_ids: The tasks (default: every task of the suite).
        parallel: Episodes at once.
        commands_on_host: ``--run-commands-on-host``: commands may run unisolated.
        sandbox: The run's sandbox backend (None: bwrap).
        options: The agent's options (``--agent-arg``).
    """
    ids = list(task_ids) if task_ids is not None else [t.id for t in suite.tasks]
    config = RunConfig(
        suite=str(suite.root),
        agent=agent,
        agent_options=dict(options or {}),
        epochs=epochs,
        snapshots=False,
        retries=0,
        run_commands_on_host=commands_on_host,
        sandbox=sandbox,
    )
    worker = Worker(config, None, suite)
    jobs = [EpisodeJob(t, e) for t in ids for e in range(epochs)]

    async def all_jobs() -> list[EpisodeRecord]:
        slots = asyncio.Semaphore(parallel)

        async def one(job: EpisodeJob) -> EpisodeRecord:
            async with slots:
                return await worker.run(job)

        return list(await asyncio.gather(*(one(job) for job in jobs)))

    out: dict[str, list[EpisodeRecord]] = {t: [] for t in ids}
    for record in asyncio.run(all_jobs()):
        out[record.task.id].append(record)
    return out


def gate_records(
    suite: Suite,
    task_ids: list[str],
    *,
    commands_on_host: bool = False,
    sandbox: str | None = None,
) -> GateRecords:
    """Run every agent the gate needs over the given tasks (``commands_on_host``:
    ``--run-commands-on-host``, commands may run unisolated; ``sandbox``: the backend)."""
    records = GateRecords()
    for agent in ("oracle", "noop", "random", *FLAWED):
        epochs = ORACLE_EPOCHS if agent == "oracle" else OTHER_EPOCHS
        records.by_agent[agent] = run_agent(
            suite, agent, epochs, task_ids, commands_on_host=commands_on_host, sandbox=sandbox
        )
    records.by_agent[BLIND] = run_agent(  # noop with a confident claim: no tool call
        suite,
        "noop",
        OTHER_EPOCHS,
        task_ids,
        commands_on_host=commands_on_host,
        sandbox=sandbox,
        options={"answer": BLIND_CLAIM},
    )
    return records
