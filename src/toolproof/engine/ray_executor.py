"""The ``ray`` executor: the same episodes as async Ray actors on a Ray cluster.

Episodes mostly wait on models, so each actor runs many at once
(``max_concurrency``); the runner keeps ``--parallel`` in flight and appends
every record to the one run store on the driver. An actor that dies (its
process killed, its node lost) has its episode retried on a fresh actor, and
after ``retries`` such deaths the episode is stored as an ``infra_error``:
never lost, never counted against the agent.

On a multi-node cluster the run directory must be on a shared file system for
per-step snapshots; otherwise run with ``--no-snapshots``.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path
from typing import Any

from toolproof.results import EpisodeRecord
from toolproof.spec import Problem, SpecError

from .config import RunConfig
from .executor import EpisodeJob, Worker, executor


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SpecError(
            [
                Problem(
                    None, None, "--executor", "ray is not installed: pip install 'toolproof[ray]'"
                )
            ]
        ) from None
    return ray


class _EpisodeActor:
    """Lives in a Ray worker process; builds the run's Worker once and runs jobs on it."""

    def __init__(self, config_json: str, run_dir: str | None) -> None:
        config = RunConfig.model_validate_json(config_json)
        self._worker = Worker(config, Path(run_dir) if run_dir else None)

    async def run(self, task_id: str, epoch: int) -> str:
        record = await self._worker.run(EpisodeJob(task_id, epoch))
        return record.model_dump_json()

    def pid(self) -> int:
        import os

        return os.getpid()

    def cpu_s(self) -> float:
        """CPU seconds (user + system) this actor's process has used."""
        import resource

        usage = resource.getrusage(resource.RUSAGE_SELF)
        return float(usage.ru_utime + usage.ru_stime)

    def node(self) -> str:
        """The id of the Ray node this actor lives on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())


class RayExecutor:
    """Runs jobs on a pool of async Ray actors."""

    def __init__(self, worker: Worker, options: dict[str, Any]) -> None:
        self._ray = _import_ray()
        self.worker = worker
        address = options.get("address")
        if not self._ray.is_initialized():
            init: dict[str, Any] = {"address": address, "include_dashboard": False}
            if address is None:
                init["num_cpus"] = int(options.get("num_cpus", 2))
            init["logging_level"] = "ERROR"
            init["log_to_driver"] = bool(options.get("log_to_driver", False))
            self._ray.init(**init)
            self._owns_ray = True
        else:
            self._owns_ray = False
        self._size = int(options.get("actors", 2))
        parallel = int(options.get("parallel", 16))
        self._concurrency = max(1, math.ceil(parallel / self._size))
        self._config_json = worker.config.model_dump_json(context={"with_secrets": True})
        run_dir = options.get("run_dir")
        self._run_dir = str(run_dir) if run_dir else None
        remote = self._ray.remote(num_cpus=float(options.get("actor_cpus", 0.5)))(_EpisodeActor)
        self._actor_class = remote.options(max_concurrency=self._concurrency, max_restarts=0)
        self._actors = [self._new_actor() for _ in range(self._size)]
        self._next = itertools.cycle(range(self._size))
        self.deaths = 0

    def _new_actor(self) -> Any:
        return self._actor_class.remote(self._config_json, self._run_dir)

    def actor_pids(self) -> list[int]:
        """Process ids of the live actors (for tests that kill one)."""
        return [int(p) for p in self._ray.get([a.pid.remote() for a in self._actors])]

    def actor_cpu_s(self) -> float:
        """CPU seconds the live actors' processes have used, summed (for benchmarks)."""
        return sum(float(c) for c in self._ray.get([a.cpu_s.remote() for a in self._actors]))

    def actor_nodes(self) -> list[str]:
        """The Ray node of each live actor (waits until they are up)."""
        return [str(n) for n in self._ray.get([a.node.remote() for a in self._actors])]

    async def submit(self, job: EpisodeJob) -> EpisodeRecord:
        """Run the job on an actor; a dead actor is replaced and the job retried."""
        errors: list[str] = []
        exceptions = self._ray.exceptions
        lost = (exceptions.RayActorError, exceptions.WorkerCrashedError, exceptions.NodeDiedError)
        while True:
            slot = next(self._next)
            actor = self._actors[slot]
            try:
                text = await actor.run.remote(job.task_id, job.epoch)
                record = EpisodeRecord.model_validate_json(text)
                if errors:
                    record = record.model_copy(
                        update={
                            "attempts": record.attempts + len(errors),
                            "infra_errors": [*errors, *record.infra_errors],
                        }
                    )
                return record
            except lost as exc:
                self.deaths += 1
                errors.append(f"ray worker died: {type(exc).__name__}")
                if self._actors[slot] is actor:
                    self._actors[slot] = self._new_actor()
                if len(errors) > self.worker.config.retries:
                    return self.worker.infra_failure(job, errors)
                await asyncio.sleep(0)

    def close(self) -> None:
        """Stop the actors, and Ray itself if this executor started it."""
        for actor in self._actors:
            self._ray.kill(actor)
        if self._owns_ray:
            self._ray.shutdown()


@executor("ray")
def build(worker: Worker, options: dict[str, Any]) -> RayExecutor:
    """``--executor ray [--ray-address ADDR]`` (a local Ray instance when no address is given)."""
    return RayExecutor(worker, options)
