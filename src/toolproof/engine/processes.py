"""Every core: the ``local`` executor's worker processes (``--workers N``).

One process runs a run's event loop on one core; with ``workers > 1`` the episodes
run in ``N`` worker processes instead (``python -m toolproof.engine._process_main``),
each with its own event loop, suite and agent factory, while the parent keeps the one
run store (the :class:`~toolproof.results.RunLock` stays one writer) and the
summary. A job goes to the worker with the fewest in flight; records come back as
JSON lines. Each worker loads only the task files the run selects (this process has
checked the whole suite). An in-process ``python:`` agent is built again in each worker from its
spec, so it must be importable there (the parent's ``sys.path`` is handed down).

A worker that dies (killed, out of memory, code in it that exits or writes to its records
pipe) has its jobs run again; how each ends is decided in one place,
:func:`~toolproof.engine.faults.worker_death_outcome` (ARCHITECTURE.md, invariant 8). With
only toolproof's code in the worker (the built-in agents, the SDK adapters) a death is a
witnessed infra fault: the job runs again on a fresh worker, and after ``retries`` deaths is
stored as an ``infra_error``. With agent code in the worker (``python:`` and every other
kind) any episode in flight may have ended it, so each of them runs again alone in a fresh
worker process of its own (one such solo run at a time, beside the run's workers); one whose
solo worker dies too ended it itself, and is the agent's ``agent_error``, in the
denominator. Episodes that only shared the dead worker are not charged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from typing import Any

from toolproof.results import EpisodeRecord
from toolproof.spec.providers import is_provided
from toolproof.trajectory import Termination

from ._jobs import EpisodeJob, Worker, share_out
from .faults import process_exit_text, worker_death_outcome

_LINE_LIMIT = 1 << 30
"""Longest record line read from a worker (a record holds a whole trajectory)."""


class WorkerDied(Exception):
    """The worker process running a job exited before returning it (``cause``: how)."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class _Process:
    """One worker process and the jobs it has in flight."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: dict[int, asyncio.Future[str]] = {}
        self.reader: asyncio.Task[None] | None = None
        self.cause: str | None = None
        """Why this process ended it, when it did (bytes on the records pipe)."""

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and self.reader is not None and not self.reader.done()


def _selection(worker: Worker) -> dict[str, Any] | None:
    """The suite folder and the files of the tasks the run selects, so that each worker
    loads only those (this process checked the whole suite); None for a suite built from
    a package (BFCL, AgentDojo) or one whose files are not all in its folder."""
    suite = worker.suite
    if is_provided(worker.config.suite):
        return None
    try:
        tasks = [
            [task_id, suite.task_file(task_id).relative_to(suite.root).as_posix()]
            for task_id in worker.config.select(suite)
        ]
    except (KeyError, ValueError):
        return None
    return {"root": str(suite.root), "tasks": tasks}


class ProcessExecutor:
    """Runs jobs in ``workers`` child processes; the runner keeps ``parallel`` in flight."""

    def __init__(self, worker: Worker, options: dict[str, Any]) -> None:
        self.worker = worker
        config = worker.config
        shares = share_out(config, int(options.get("workers", os.cpu_count() or 1)))
        self.size = len(shares)
        run_dir = options.get("run_dir")
        selection = _selection(worker)
        self._hellos = [
            json.dumps(
                {
                    "config": share.config.model_dump_json(context={"with_secrets": True}),
                    "run_dir": str(run_dir) if run_dir else None,
                    "selection": selection,
                }
            )
            for share in shares
        ]
        # By each one's part of the tightest limit: with --max-model-calls 3 and two workers
        # (parts 2 and 1), two jobs to the first for each to the second, rather than as many,
        # which would leave the second's queue waiting on its one call.
        self._weights = [share.weight for share in shares]
        self._slots: list[_Process | None] = [None] * self.size
        self._starting: list[asyncio.Lock] | None = None
        self._ids = itertools.count()
        self._solo: asyncio.Lock | None = None
        self.deaths = 0

    async def _spawn(self, hello: str) -> _Process:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "toolproof.engine._process_main",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=_LINE_LIMIT,
        )
        child = _Process(proc)
        assert proc.stdin is not None
        proc.stdin.write(hello.encode() + b"\n")
        child.reader = asyncio.create_task(self._read(child))
        return child

    async def _read(self, child: _Process) -> None:
        stdout = child.proc.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                head, _, rest = line.partition(b',"record":')
                try:
                    ident = int(head[len(b'{"id":') :])
                except ValueError:  # not the protocol (code in the worker wrote to it): end it
                    child.cause = "it wrote a line that is not a record to its records pipe"
                    child.proc.kill()
                    break
                future = child.pending.pop(ident, None)
                if future is not None and not future.done():
                    future.set_result(rest[:-2].decode())  # drop the closing } and newline
        except (ValueError, ConnectionError) as exc:  # a line over the limit, a broken pipe
            child.cause = f"its records pipe failed ({type(exc).__name__})"
            child.proc.kill()
        finally:
            code = await child.proc.wait()
            cause = child.cause or process_exit_text(code)
            for future in child.pending.values():
                if not future.done():
                    future.set_exception(WorkerDied(f"{cause} (worker process {child.proc.pid})"))
            child.pending.clear()

    async def _pick(self) -> _Process:
        if self._starting is None:
            self._starting = [asyncio.Lock() for _ in range(self.size)]
        for slot, child in enumerate(self._slots):
            if child is None or not child.alive:
                async with self._starting[slot]:
                    current = self._slots[slot]
                    if current is None or not current.alive:
                        self._slots[slot] = await self._spawn(self._hellos[slot])
        live = [(c, w) for c, w in zip(self._slots, self._weights, strict=True) if c is not None]
        return min(live, key=lambda pair: len(pair[0].pending) / pair[1])[0]

    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests that kill one)."""
        return [c.proc.pid for c in self._slots if c is not None and c.alive]

    async def submit(self, job: EpisodeJob) -> EpisodeRecord:
        """Run the job on the least busy worker, for its part of the limits; a dead worker's
        job runs again as :func:`~toolproof.engine.faults.worker_death_outcome` decides."""
        errors: list[str] = []
        solo = False
        while True:
            if solo:
                result = await self._alone(job)
            else:
                result = await self._attempt(await self._pick(), job)
            if isinstance(result, EpisodeRecord):
                return _with_errors(result, errors)
            self.deaths += 1
            outcome = worker_death_outcome(self.worker.config.agent, result, solo=solo)
            if outcome is None:  # agent code shared the worker: whose was it? run it alone
                solo = True
                errors.append(f"worker process died ({result}) beside this episode: run alone")
                continue
            termination, text = outcome
            if termination is not Termination.INFRA_ERROR:
                return self.worker.unrun(job, errors, termination, text)
            errors.append(text)
            if len(errors) > self.worker.config.retries:
                return self.worker.infra_failure(job, errors)

    async def _attempt(self, child: _Process, job: EpisodeJob) -> EpisodeRecord | str:
        """The job's record from ``child``, or how ``child`` died under it."""
        ident = next(self._ids)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        child.pending[ident] = future
        stdin = child.proc.stdin
        assert stdin is not None
        message = {"id": ident, "task": job.task_id, "epoch": job.epoch}
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            text = await future
        except asyncio.CancelledError:
            child.pending.pop(ident, None)
            with contextlib.suppress(Exception):
                stdin.write(json.dumps({"cancel": ident}).encode() + b"\n")
            raise
        except WorkerDied as exc:
            child.pending.pop(ident, None)
            return exc.cause
        except (ConnectionError, RuntimeError) as exc:  # its input pipe: it is gone
            child.pending.pop(ident, None)
            child.proc.kill()
            return f"its input pipe failed ({type(exc).__name__}: {str(exc)[:200]})"
        try:
            return EpisodeRecord.model_validate_json(text)
        except ValueError as exc:  # not a record (code in the worker wrote to the pipe)
            child.proc.kill()
            return f"it sent no valid record ({str(exc)[:300]})"

    async def _alone(self, job: EpisodeJob) -> EpisodeRecord | str:
        """The job run alone in a fresh worker process (one at a time), ended after it."""
        if self._solo is None:
            self._solo = asyncio.Lock()
        async with self._solo:
            child = await self._spawn(self._hellos[0])
            try:
                return await self._attempt(child, job)
            finally:
                await _end(child)

    async def aclose(self) -> None:
        """End every worker: close its input, wait a moment, then kill it."""
        for child in self._slots:
            if child is not None and child.proc.stdin is not None:
                child.proc.stdin.close()
        for child in self._slots:
            if child is not None:
                await _end(child)
        self._slots = [None] * self.size


async def _end(child: _Process) -> None:
    """End ``child``: close its input (it finishes what it has and exits), wait a moment,
    then kill it."""
    if child.proc.stdin is not None:
        child.proc.stdin.close()
    try:
        await asyncio.wait_for(child.proc.wait(), 10)
    except TimeoutError:
        child.proc.kill()
        await child.proc.wait()
    if child.reader is not None:
        await asyncio.gather(child.reader, return_exceptions=True)


def _with_errors(record: EpisodeRecord, errors: list[str]) -> EpisodeRecord:
    """``record`` with the attempts its dead workers cost before it."""
    if not errors:
        return record
    return record.model_copy(
        update={
            "attempts": record.attempts + len(errors),
            "infra_errors": [*errors, *record.infra_errors],
        }
    )
