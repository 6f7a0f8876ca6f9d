"""Executors run one episode job each; the runner decides how many are in flight.

The job, the worker that runs it and the split of a run's limits live in ``_jobs.py``,
which every executor imports (re-exported here); this module holds the
:class:`Executor` protocol, the registry (``@executor``, :func:`make_executor`) and the
``local`` executor, which runs jobs in this process or, with ``workers > 1``, in worker
processes (``processes.py``, imported on use).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from toolproof.results import EpisodeRecord
from toolproof.spec import Problem, SpecError

from ._jobs import EpisodeJob, Share, Worker, share_out

__all__ = [
    "EpisodeJob",
    "Executor",
    "ExecutorBuilder",
    "LocalExecutor",
    "Share",
    "Worker",
    "executor",
    "make_executor",
    "share_out",
]


class Executor(Protocol):
    """Runs one job and returns its record. One required method."""

    async def submit(self, job: EpisodeJob) -> EpisodeRecord:
        """Run the job to its end (retrying infra errors) and return the record."""
        ...


ExecutorBuilder = Callable[[Worker, dict[str, Any]], Executor]
"""Makes an executor for a run's worker and the ``--executor-arg`` options."""

_EXECUTORS: dict[str, ExecutorBuilder] = {}
_LAZY = {"ray": "toolproof.engine.ray_executor"}


def executor(name: str) -> Callable[[ExecutorBuilder], ExecutorBuilder]:
    """Register an executor kind by name.

    Raises:
        ValueError: the name is taken.
    """

    def register(builder: ExecutorBuilder) -> ExecutorBuilder:
        if name in _EXECUTORS:
            raise ValueError(f"executor {name!r} is already registered")
        _EXECUTORS[name] = builder
        return builder

    return register


def make_executor(name: str, worker: Worker, options: dict[str, Any] | None = None) -> Executor:
    """Build a registered executor.

    Raises:
        SpecError: unknown name, listing the valid ones.
    """
    if name not in _EXECUTORS and name in _LAZY:
        importlib.import_module(_LAZY[name])
    if name not in _EXECUTORS:
        known = ", ".join(sorted({*_EXECUTORS, *_LAZY}))
        raise SpecError(
            [Problem(None, None, "--executor", f"unknown executor {name!r}; use {known}")]
        )
    return _EXECUTORS[name](worker, dict(options or {}))


class LocalExecutor:
    """Runs jobs in this process's event loop (episodes mostly wait on models)."""

    def __init__(self, worker: Worker, options: dict[str, Any] | None = None) -> None:
        self.worker = worker

    async def submit(self, job: EpisodeJob) -> EpisodeRecord:
        """Run the job here.

        As in a worker process or a Ray actor, the harness failing outside the episode
        (rendering the task, making the record) is that episode's infra error, not the
        run's end; a :class:`SpecError` (the run cannot run this task) still stops the run.
        """
        try:
            return await self.worker.run(job)
        except SpecError:
            raise
        except Exception as exc:
            return self.worker.infra_failure(job, [f"{type(exc).__name__}: {exc}"[:2000]])


@executor("local")
def _local(worker: Worker, options: dict[str, Any]) -> Executor:
    """``--executor local``: this process, or ``--workers N`` worker processes (every core)."""
    if int(options.get("workers", 1)) > 1:
        from .processes import ProcessExecutor

        return ProcessExecutor(worker, options)
    return LocalExecutor(worker, options)
