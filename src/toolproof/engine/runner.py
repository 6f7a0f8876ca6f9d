"""The runner: plan the episodes of a run, keep N in flight, store each as it ends, resume.

Results are appended to the run store as each episode ends and committed in
small batches (at most :data:`COMMIT_DELAY_S` after the episode ended), so a killed
run loses at most the last moment's episodes, which a resume runs again; the summary
is counted as episodes are stored (:class:`~toolproof.metrics.summary.Summarizer`),
so finishing a run reads nothing back; ``resume`` runs only the missing episodes and
refuses when the configuration or the suite changed. :meth:`Runner.request_stop` (the CLI calls
it on Ctrl-C) starts no new episode, cancels the running ones and still writes
a summary, marked incomplete.

No single episode stops the run (ARCHITECTURE.md, invariant 8): an episode whose record
the store cannot write is stored as a harness fault (:func:`.faults.unstorable`), and a
resume drops the stored episodes it cannot read back (a damaged ``trajectories.jsonl``
line) and runs them again, saying which.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from toolproof._version import __version__
from toolproof.metrics import summarize
from toolproof.metrics.summary import Summarizer
from toolproof.results import (
    TRAJECTORIES,
    DamagedRecord,
    EpisodeRecord,
    RunDirError,
    RunReader,
    RunStore,
    UnstorableRecord,
)
from toolproof.spec import Problem, SpecError, Suite, load_suite

from ._collections import paced_collections
from .config import RunConfig
from .executor import EpisodeJob, Executor, Worker, make_executor
from .faults import unstorable

_log = logging.getLogger(__name__)

ProgressCallback = Callable[[EpisodeRecord], None]

COMMIT_EVERY = 64
"""Stored episodes per SQLite commit at most (one commit per episode cost ~15% of the
engine's CPU per episode)."""
COMMIT_DELAY_S = 0.2
"""Longest a stored episode waits for its commit (a kill loses no more than this)."""


class ResumeError(SpecError):
    """A run cannot be resumed under the given configuration."""


def environment() -> dict[str, Any]:
    """Facts about the machine and software that produced a run."""
    return {
        "toolproof": __version__,
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": _platform(),
    }


def _platform() -> str:
    """What :func:`platform.platform` says on Linux with glibc (``Linux-6.1.0-x86_64-with-
    glibc2.36``), from ``os.uname`` and the C library's own answer: without its
    ``uname -p`` subprocess and its read of the interpreter's binary (a tenth of a
    one-task run's start). Elsewhere, :func:`platform.platform` itself."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        libc = ""
    name, _, version = libc.partition(" ")
    u = os.uname()
    if u.sysname != "Linux" or name != "glibc" or not version:
        return platform.platform()
    return "-".join(
        part.replace(" ", "_").replace("/", "-")
        for part in (u.sysname, u.release, u.machine, "with", f"glibc{version}")
    )


def plan(config: RunConfig, suite: Suite) -> list[EpisodeJob]:
    """Every episode of the run, in task then epoch order."""
    return [
        EpisodeJob(task_id, epoch)
        for task_id in config.select(suite)
        for epoch in range(config.epochs)
    ]


class Runner:
    """Runs a configuration into a run directory."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: Path,
        *,
        parallel: int = 4,
        executor: Executor | None = None,
        executor_name: str = "local",
        executor_options: dict[str, Any] | None = None,
        on_episode: ProgressCallback | None = None,
        suite: Suite | None = None,
    ) -> None:
        self.config = config
        self.run_dir = run_dir
        self.parallel = max(1, parallel)
        self.suite = suite or load_suite(
            config.suite, allow_drift=config.allow_drift, tasks=config.tasks
        )
        self._executor = executor
        self.executor_name = executor_name
        self.executor_options = dict(executor_options or {})
        self.on_episode = on_episode
        self.stopped = False
        """True once :meth:`request_stop` was called: the summary may be incomplete."""
        self.stop_reason: str | None = None
        """Why the run stopped before its plan ended: a budget reached (``--max-tokens``,
        ``--max-cost``); None for Ctrl-C or a finished run. Written into the summary."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._summarizer: Summarizer | None = None
        self._stored: Summarizer | None = None
        """What a resume found stored (:meth:`check_resumable` counts it once)."""
        self._commit_timer: asyncio.TimerHandle | None = None
        self._commit_error: RunDirError | None = None
        """A commit the timer made failed: the next episode stored raises it (a loop
        callback cannot stop the run, and its error would be a logged traceback)."""
        if not config.select(self.suite):
            raise SpecError(
                [
                    Problem(
                        None,
                        None,
                        "--task",
                        f"no task of suite {self.suite.name!r} matches {config.tasks}",
                    )
                ]
            )

    def meta(self) -> dict[str, Any]:
        """What the run records about itself (config, suite, track, environment, plan)."""
        suite = self.suite
        return {
            "config": self.config.model_dump(),
            "identity": self.config.identity(),
            "suite": {
                "name": suite.name,
                "version": suite.config.version,
                "digest": suite.digest,
                "seed": self.config.effective_seed(suite),
                "canary": suite.config.canary,
            },
            "track": self.config.track(),
            "environment": {
                **environment(),
                **({"live_cassettes": self.config.live.get("digest")} if self.config.live else {}),
            },
            "planned": len(self.config.select(suite)) * self.config.epochs,
        }

    def check_resumable(self, store: RunStore) -> None:
        """Refuse to resume a run made under another configuration or suite content.

        When the run may resume, count what it stored (once: :meth:`run` goes on from that
        count), dropping the episodes that cannot be read back: they run again.

        Raises:
            ResumeError: naming each difference.
        """
        meta = store.meta()
        if not meta:
            return
        problems = []
        old = _placement_free(meta.get("identity", {}))
        new = _placement_free(self.config.identity())
        for key in sorted(old.keys() | new.keys()):
            if old.get(key) != new.get(key):
                problems.append(
                    Problem(None, None, key, f"the run used {old.get(key)!r}, now {new.get(key)!r}")
                )
        if meta.get("suite", {}).get("digest") != self.suite.digest:
            problems.append(
                Problem(None, None, "suite", "the suite's files changed since the run started")
            )
        if problems:
            problems.append(
                Problem(
                    None, None, "fix", "resume with the original configuration, or start a new run"
                )
            )
            raise ResumeError(problems)
        if self._stored is None:
            self._stored = self._count_stored(store)

    def request_stop(self) -> None:
        """Stop the run soon: start no new episode, cancel the running ones, then finalize.

        Finished episodes are kept and :meth:`run` returns the summary of what
        finished (``episodes.complete`` is false). Safe to call from a signal
        handler or another thread; calling it twice is harmless.
        """
        self.stopped = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._cancel_workers)

    def _cancel_workers(self) -> None:
        for task in self._workers:
            task.cancel()

    async def run(self) -> dict[str, Any]:
        """Run every missing episode; return the summary (also written to summary.json).

        The agent spec is checked before anything is written, so a bad spec
        leaves no run directory behind.
        """
        self._loop = asyncio.get_running_loop()
        worker = Worker(self.config, self.run_dir, self.suite) if self._executor is None else None
        store = RunStore(self.run_dir, commit_every=COMMIT_EVERY)
        try:
            self.check_resumable(store)  # a resume: what is stored is counted (once)
            store.set_meta(self.meta())
            done = store.keys()
            summarizer, self._stored = self._stored or Summarizer(), None
            self._summarizer = summarizer
            jobs = (  # lazily: a plan of 50,000 jobs held at once grew the run's memory
                EpisodeJob(task_id, epoch)
                for task_id in self.config.select(self.suite)
                for epoch in range(self.config.epochs)
                if f"{task_id}#{epoch}" not in done
            )
            executor = self._executor
            if executor is None:
                assert worker is not None
                options: dict[str, Any] = {"parallel": self.parallel, "run_dir": self.run_dir}
                placement = self.config.placement
                if (
                    placement is not None
                    and placement.workers > 1
                    and self.executor_name == "local"
                ):
                    options["workers"] = placement.workers  # an explicit --workers wins
                executor = make_executor(
                    self.executor_name, worker, {**options, **self.executor_options}
                )
            try:
                with paced_collections():
                    await self._drain(jobs, executor, store)
            finally:
                aclose = getattr(executor, "aclose", None)
                if worker is not None and callable(aclose):
                    await aclose()
                close = getattr(executor, "close", None)
                if worker is not None and callable(close):
                    close()
            return self.finalize(store)
        finally:
            store.close()

    def _count_stored(self, store: RunStore) -> Summarizer:
        """The stored episodes counted; those that cannot be read back are dropped from the
        store (to run again), with a warning naming them and the first one's cause."""
        summarizer = Summarizer()
        damaged: list[DamagedRecord] = []
        with RunReader(self.run_dir) as reader:
            for stored in reader.records(damaged.append):
                summarizer.add(stored)
        if damaged:
            keys = sorted(d.key for d in damaged)
            _log.warning(
                "%s: %d stored episode(s) cannot be read back and run again (%s); the first: %s",
                self.run_dir / TRAJECTORIES,
                len(keys),
                ", ".join(keys[:5]) + (" ..." if len(keys) > 5 else ""),
                damaged[0].why,
            )
            store.forget(set(keys))
        return summarizer

    def _store(self, store: RunStore, record: EpisodeRecord) -> EpisodeRecord:
        """Append ``record``; one the store cannot write is stored as a harness fault."""
        if self._commit_error is not None:  # the run folder failed under the commit timer
            raise self._commit_error
        try:
            store.append(record)
        except UnstorableRecord as exc:
            record = unstorable(record, exc)
            store.append(record)
        return record

    def _commit(self, store: RunStore) -> None:
        self._commit_timer = None
        try:
            store.commit()
        except RunDirError as exc:  # what is pending stays pending; the run stops on it
            self._commit_error = exc

    async def _drain(self, jobs: Iterator[EpisodeJob], executor: Executor, store: RunStore) -> None:
        """Keep ``parallel`` episodes in flight until the jobs run out or a stop is requested."""
        summarizer = self._summarizer
        assert summarizer is not None

        async def worker() -> None:
            while not self.stopped:
                reached = self._budget_reached(summarizer)
                if reached is not None:
                    self.stop_reason = reached
                    self.stopped = True  # the other workers finish their episode and stop
                    return
                job = next(jobs, None)
                if job is None:
                    return
                record = self._store(store, await executor.submit(job))
                summarizer.add(record)
                if store.pending and self._commit_timer is None:
                    loop = asyncio.get_running_loop()
                    self._commit_timer = loop.call_later(COMMIT_DELAY_S, self._commit, store)
                if self.on_episode is not None:
                    self.on_episode(record)
                # A turn for the event loop: episodes of agents that never suspend (the
                # built-ins) would otherwise run back to back and a stop request (a
                # loop callback) would wait for the whole run.
                await asyncio.sleep(0)

        workers = [asyncio.create_task(worker()) for _ in range(self.parallel)]
        self._workers = workers
        if self.stopped:  # asked to stop before the workers existed
            self._cancel_workers()
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self.stopped or (current is not None and current.cancelling()):
                raise  # cancelled from outside, not by request_stop
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            self._workers = []
            if self._commit_timer is not None:
                self._commit_timer.cancel()
                self._commit_timer = None
            store.commit()

    def _budget_reached(self, summarizer: Summarizer) -> str | None:
        """The budget the run's spend so far reached (a sentence naming it and the option
        that raises it), or None. Checked before each episode starts: the episodes in
        flight finish, so a run may pass its budget by what they spend."""
        config, overall = self.config, summarizer.overall
        tokens = overall.tokens_in + overall.tokens_out
        if config.max_tokens is not None and tokens >= config.max_tokens:
            return (
                f"token budget reached: {tokens} agent tokens >= --max-tokens "
                f"{config.max_tokens}; raise it on resume"
            )
        if config.max_cost_usd is not None and overall.cost_total >= config.max_cost_usd:
            return (
                f"cost budget reached: ${overall.cost_total:.4f} >= --max-cost "
                f"{config.max_cost_usd:g}; raise it on resume"
            )
        return None

    def finalize(self, store: RunStore) -> dict[str, Any]:
        """Write the summary: counted during :meth:`run`, else from everything stored. A
        run a budget stopped says so (``episodes.stop_reason``)."""
        store.commit()
        if self._summarizer is not None:
            summary = self._summarizer.summary(store.meta())
        else:
            with RunReader(self.run_dir) as reader:
                summary = summarize(reader.records(), reader.meta())
        episodes = summary.get("episodes", {})
        if self.stop_reason is not None and not episodes.get("complete", True):
            episodes["stop_reason"] = self.stop_reason
        store.finalize(summary)
        return summary


def _placement_free(identity: dict[str, Any]) -> dict[str, Any]:
    """A run's identity without the agent's ``loop`` option: where a ``python:`` agent runs
    (its own thread or the harness's loop) does not change its records, and a run stopped
    under ``loop=harness`` resumes with ``--agent-arg loop=own``."""
    options = identity.get("agent_options")
    if not isinstance(options, dict) or "loop" not in options:
        return identity
    return {**identity, "agent_options": {k: v for k, v in options.items() if k != "loop"}}
