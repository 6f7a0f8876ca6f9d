"""The ``ray`` executor: the same episodes as async Ray actors on a Ray cluster.

Episodes mostly wait on models, so each actor runs many at once
(``max_concurrency``); the runner keeps ``--parallel`` in flight and appends
every record to the one run store on the driver.

Jobs go to the actors in batches: the jobs submitted in one turn of the driver's event
loop (the runner's workers ask for their next episodes together when a batch comes back),
up to ``batch`` of them (default: half of each actor's share of ``--parallel``, so an actor
has two batches going and one's slowest episode does not leave it idle), are one actor call
that runs them at once and returns their records together, each as JSON. A Ray call
costs about 0.6 ms of driver CPU, as much again in the actor: one per episode was most of
what Ray cost over the local executor; one per batch of 8 is a tenth of it. Records are
stored as their batch comes back, so a killed run loses at most the batches in flight (a
resume runs them again). ``batch=1`` is one call per episode.

An actor that dies (its process killed, its node lost) is judged as a worker process is
(:func:`~toolproof.engine.faults.worker_death_outcome`, invariant 8). With only toolproof's
code in it (a built-in or a model-server agent) its episodes are retried on a fresh actor,
and after ``retries`` such deaths an episode is stored as an ``infra_error``: never lost,
never counted against the agent. With the agent's code in it, each episode of its batch
runs again alone on a fresh actor, and one whose lone actor dies too is the agent's
``agent_error``, in the denominator.

``--max-model-calls`` and ``--max-sandboxes`` bound the whole run, as with ``--workers``:
each actor gets a part of them (for its agents' turns, its tool threads and its model
gateway: framework agents, the user and judge models), the parts adding up to the limit;
there are no more actors than the smallest limit, and batches go to the actor with the
fewest episodes in flight for its part.

On a multi-node cluster the run directory must be on a shared file system for
per-step snapshots; otherwise run with ``--no-snapshots``.
"""

from __future__ import annotations

import asyncio
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolproof.results import EpisodeRecord
from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Termination

from ._jobs import EpisodeJob, Worker, share_out
from .config import RunConfig
from .executor import executor
from .faults import record_json, worker_death_outcome


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
        if config.max_model_calls is not None:  # this actor's part, as ``run`` sets the driver's
            from toolproof import gateway

            gateway.limit_shared(config.max_model_calls)
        self._worker = Worker(config, Path(run_dir) if run_dir else None)

    async def run_batch(self, jobs: list[tuple[str, int]]) -> list[str]:
        """Run the jobs at once; their records as JSON, in the jobs' order."""
        return list(await asyncio.gather(*(self._one(EpisodeJob(t, e)) for t, e in jobs)))

    async def _one(self, job: EpisodeJob) -> str:
        try:
            record = await self._worker.run(job)
        except Exception as exc:  # the harness failed outside the episode: an infra error
            record = self._worker.infra_failure(job, [f"ray worker: {type(exc).__name__}: {exc}"])
        return record_json(record)

    def gateway_limit(self) -> int | None:
        """The ``max_concurrent`` of this process's model gateway (for tests)."""
        from toolproof import gateway

        return gateway.shared().max_concurrent

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


@dataclass
class _Pending:
    """A submitted job waiting for its record, with the worker deaths it met."""

    job: EpisodeJob
    future: asyncio.Future[EpisodeRecord]
    errors: list[str]
    solo: bool = False
    """It runs alone on an actor: its batch's actor died with agent code in it."""


class RayExecutor:
    """Runs jobs on a pool of async Ray actors, in batches (see the module's docstring)."""

    def __init__(self, worker: Worker, options: dict[str, Any]) -> None:
        self._ray = _import_ray()
        self.worker = worker
        address = options.get("address")
        if not self._ray.is_initialized():
            if address is None and not os.environ.get("RAY_ADDRESS"):
                # A new local instance: Ray would otherwise attach to the last cluster
                # `ray start` made on this machine (someone else's, maybe).
                address = "local"
            init: dict[str, Any] = {"address": address, "include_dashboard": False}
            if address == "local":
                init["num_cpus"] = int(options.get("num_cpus", 2))
            init["logging_level"] = "ERROR"
            init["log_to_driver"] = bool(options.get("log_to_driver", False))
            self._ray.init(**init)
            self._owns_ray = True
        else:
            self._owns_ray = False
        shares = share_out(worker.config, int(options.get("actors", 2)))
        self._size = len(shares)
        parallel = int(options.get("parallel", 16))
        self._concurrency = max(1, math.ceil(parallel / self._size))
        self._configs = [s.config.model_dump_json(context={"with_secrets": True}) for s in shares]
        self._weights = [s.weight for s in shares]
        self._in_flight = [0] * self._size
        run_dir = options.get("run_dir")
        self._run_dir = str(run_dir) if run_dir else None
        remote = self._ray.remote(num_cpus=float(options.get("actor_cpus", 0.5)))(_EpisodeActor)
        self._actor_class = remote.options(max_concurrency=self._concurrency, max_restarts=0)
        self._actors = [self._new_actor(slot) for slot in range(self._size)]
        self._batch = max(1, int(options.get("batch", math.ceil(self._concurrency / 2))))
        self._waiting: list[_Pending] = []
        self._flush_soon = False
        self._sending: set[asyncio.Task[None]] = set()
        self._solo: asyncio.Lock | None = None  # one episode at a time on an actor of its own
        self._closed = False
        self.deaths = 0

    def _new_actor(self, slot: int) -> Any:
        return self._actor_class.remote(self._configs[slot], self._run_dir)

    def _pick(self) -> int:
        """The slot with the fewest episodes in flight for its part of the limits."""
        return min(range(self._size), key=lambda s: self._in_flight[s] / self._weights[s])

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
        """Run the job on an actor, in a batch with the jobs submitted in the same turn."""
        future: asyncio.Future[EpisodeRecord] = asyncio.get_running_loop().create_future()
        self._queue(_Pending(job, future, []))
        return await future

    def _queue(self, pending: _Pending) -> None:
        self._waiting.append(pending)
        if len(self._waiting) >= self._batch:
            self._flush()
        elif not self._flush_soon:
            self._flush_soon = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Send what waits, in batches of at most ``batch``, each to the next actor."""
        self._flush_soon = False
        while self._waiting:
            batch = [p for p in self._waiting[: self._batch] if not p.future.done()]
            del self._waiting[: self._batch]
            if batch:
                task = asyncio.get_running_loop().create_task(self._send(batch))
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)

    def _send_alone(self, pending: _Pending) -> None:
        task = asyncio.get_running_loop().create_task(self._run_alone(pending))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _run_alone(self, pending: _Pending) -> None:
        """Run one episode on a fresh actor of its own (one such at a time), then stop it:
        a death there is this episode's alone."""
        if self._solo is None:
            self._solo = asyncio.Lock()
        async with self._solo:
            if pending.future.done():
                return
            actor = self._new_actor(0)
            try:
                await self._run_on(0, [pending], actor=actor)
            finally:
                self._ray.kill(actor)

    async def _send(self, batch: list[_Pending]) -> None:
        slot = self._pick()
        self._in_flight[slot] += len(batch)
        try:
            await self._run_on(slot, batch)
        finally:
            self._in_flight[slot] -= len(batch)

    async def _run_on(self, slot: int, batch: list[_Pending], actor: Any = None) -> None:
        exceptions = self._ray.exceptions
        lost = (exceptions.RayActorError, exceptions.WorkerCrashedError, exceptions.NodeDiedError)
        alone = actor is not None  # an actor of the batch's own (_run_alone), not the slot's
        actor = actor if alone else self._actors[slot]
        try:
            texts = await actor.run_batch.remote([(p.job.task_id, p.job.epoch) for p in batch])
        except asyncio.CancelledError:
            for p in batch:
                p.future.cancel()
            raise
        except lost as exc:
            if self._closed:  # the actors were stopped (a run stopped early)
                for p in batch:
                    p.future.cancel()
                return
            self.deaths += 1
            if not alone and self._actors[slot] is actor:
                self._actors[slot] = self._new_actor(slot)
            cause = f"ray worker died: {type(exc).__name__}"
            for p in batch:  # faults.worker_death_outcome decides, as for worker processes
                if p.future.done():
                    continue
                solo = alone and len(batch) == 1
                outcome = worker_death_outcome(self.worker.config.agent, cause, solo=solo)
                if outcome is None:  # agent code beside others: run it again, alone
                    p.solo = True
                    self._send_alone(p)
                    continue
                termination, text = outcome
                if termination is not Termination.INFRA_ERROR:
                    p.future.set_result(self.worker.unrun(p.job, p.errors, termination, text))
                    continue
                p.errors.append(cause)
                if len(p.errors) > self.worker.config.retries:
                    p.future.set_result(self.worker.infra_failure(p.job, p.errors))
                else:
                    self._queue(p)
            return
        except Exception as exc:  # not a lost worker: the runner sees it as it was
            for p in batch:
                if not p.future.done():
                    p.future.set_exception(exc)
            return
        for p, text in zip(batch, texts, strict=True):
            if p.future.done():  # its runner worker was cancelled (a stop)
                continue
            record = EpisodeRecord.model_validate_json(text)
            if p.errors:
                record = record.model_copy(
                    update={
                        "attempts": record.attempts + len(p.errors),
                        "infra_errors": [*p.errors, *record.infra_errors],
                    }
                )
            p.future.set_result(record)

    async def aclose(self) -> None:
        """Stop waiting for the batches in flight (the runner calls it before :meth:`close`)."""
        self._closed = True
        for task in list(self._sending):
            task.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)

    def close(self) -> None:
        """Stop the actors, and Ray itself if this executor started it."""
        self._closed = True
        for actor in self._actors:
            self._ray.kill(actor)
        if self._owns_ray:
            self._ray.shutdown()


@executor("ray")
def build(worker: Worker, options: dict[str, Any]) -> RayExecutor:
    """``--executor ray [--ray-address ADDR]`` (a local Ray instance when no address is given)."""
    return RayExecutor(worker, options)
