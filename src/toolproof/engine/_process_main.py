"""The worker process of the ``local`` executor with ``workers > 1`` (see ``processes``).

Reads JSON lines on stdin: first ``{"config": ..., "run_dir": ...}``, then jobs
``{"id": n, "task": ..., "epoch": ...}`` and ``{"cancel": n}``; runs every job it is
given at once in its own event loop, with the run's suite (only the task files the
run selects, when the first line names them) and agent factory built here from the
configuration (a ``python:`` agent is imported again from its spec),
and writes ``{"id": n, "record": ...}`` lines on stdout as episodes end. Stdout is
the protocol only: the agents' prints go to stderr. End of input: finish the jobs
in flight, then exit.

    python -m toolproof.engine._process_main
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any


async def _serve(protocol: Any) -> None:
    from toolproof.engine._collections import paced_collections
    from toolproof.engine._jobs import Worker
    from toolproof.engine.config import RunConfig

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    first = json.loads(await reader.readline())
    config = RunConfig.model_validate_json(first["config"])
    if config.max_model_calls is not None:  # this process's part of the run's limit
        from toolproof import gateway

        gateway.limit_shared(config.max_model_calls)
    run_dir = Path(first["run_dir"]) if first.get("run_dir") else None
    worker = Worker(config, run_dir, _selected(first.get("selection")))
    running: dict[int, asyncio.Task[None]] = {}
    with paced_collections():
        await _jobs(reader, worker, running, protocol)


def _selected(selection: dict[str, Any] | None) -> Any:
    """The suite with only the run's tasks, loaded from their files (None: load it all)."""
    if not selection:
        return None
    from toolproof.spec.index import load_recorded_tasks

    tasks = [(str(task_id), str(rel)) for task_id, rel in selection["tasks"]]
    return load_recorded_tasks(Path(selection["root"]), tasks)


async def _jobs(reader: Any, worker: Any, running: dict[int, Any], protocol: Any) -> None:
    from toolproof.engine._jobs import EpisodeJob
    from toolproof.engine.faults import record_json

    async def one(ident: int, job: EpisodeJob) -> None:
        try:
            record = await worker.run(job)
        except Exception as exc:  # the harness failed outside the episode: an infra error
            record = worker.infra_failure(job, [f"worker process: {type(exc).__name__}: {exc}"])
        finally:
            running.pop(ident, None)
        protocol.write(f'{{"id":{ident},"record":{record_json(record)}}}\n'.encode())
        if not flushing:  # one write to the pipe per turn of the loop, not one per record
            flushing.append(True)
            asyncio.get_running_loop().call_soon(flush)

    flushing: list[bool] = []

    def flush() -> None:
        flushing.clear()
        protocol.flush()

    while line := await reader.readline():
        message = json.loads(line)
        if "cancel" in message:
            task = running.get(int(message["cancel"]))
            if task is not None:
                task.cancel()
            continue
        ident = int(message["id"])
        job = EpisodeJob(str(message["task"]), int(message["epoch"]))
        running[ident] = asyncio.create_task(one(ident, job))
    if running:
        await asyncio.gather(*running.values(), return_exceptions=True)
    protocol.flush()


PIPE_BYTES = 1 << 20
"""The records pipe's capacity asked for (Linux's default is 64 KiB, a handful of records)."""


def _widen_pipe(fd: int) -> None:
    """Let the records pipe hold about a hundred records: while the parent is busy the
    worker's writes (blocking: the protocol is a plain file) then do not stall its loop.
    Where that is not allowed (another system, a lower ``pipe-max-size``), as it is."""
    try:
        import fcntl

        setting = getattr(fcntl, "F_SETPIPE_SZ", None)
        if setting is not None:
            fcntl.fcntl(fd, setting, PIPE_BYTES)
    except (ImportError, OSError, ValueError):
        pass


def main() -> None:
    """Serve jobs until stdin closes."""
    fd = os.dup(sys.stdout.fileno())
    _widen_pipe(fd)
    protocol = os.fdopen(fd, "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt it
    asyncio.run(_serve(protocol))


if __name__ == "__main__":
    main()
