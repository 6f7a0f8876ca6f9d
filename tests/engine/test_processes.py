"""Worker processes (``--workers N``): the same results as one process, and a killed worker
costs a retry, never a result."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import toolproof_test_agents as test_agents

from toolproof.engine import RunConfig, Runner
from toolproof.engine.executor import Worker
from toolproof.engine.processes import ProcessExecutor
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import load_suite
from toolproof_helpers import make_task, strip_timing

AGENT = "python:toolproof_test_agents:SlowRandom"
"""A user's in-process agent: each worker imports it again from its spec."""


def _config(suite_dir: Callable[..., Path]) -> RunConfig:
    root = suite_dir([make_task(id=task_id) for task_id in ("a", "b", "c")])
    return RunConfig(suite=str(root), agent=AGENT, epochs=4, seed=9, snapshots=False)


def _trajectories(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return [strip_timing(json.loads(line)) for line in lines]


def _scores(run_dir: Path) -> dict[str, tuple[bool, str, float]]:
    with RunReader(run_dir) as reader:
        return {
            r.key: (r.score.passed, r.score.level.value, r.score.fraction) for r in reader.records()
        }


def test_workers_give_what_one_process_gives(
    suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(test_agents.SLEEP_ENV, "0")
    config = _config(suite_dir)
    one = asyncio.run(Runner(config, tmp_path / "one", parallel=4).run())
    two = asyncio.run(
        Runner(config, tmp_path / "two", parallel=4, executor_options={"workers": 2}).run()
    )
    assert _trajectories(tmp_path / "two") == _trajectories(tmp_path / "one")
    assert _scores(tmp_path / "two") == _scores(tmp_path / "one")
    for section in ("episodes", "success", "levels", "tasks", "pass_at_k", "tool_use"):
        assert two[section] == one[section], section


def test_a_killed_worker_costs_a_retry_not_a_result(
    suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(test_agents.SLEEP_ENV, "0.05")  # episodes in flight when the kill comes
    config = _config(suite_dir)
    asyncio.run(Runner(config, tmp_path / "reference", parallel=6).run())
    run_dir = tmp_path / "run"
    killed: list[int] = []

    async def run() -> dict[str, Any]:
        executor = ProcessExecutor(Worker(config, run_dir), {"workers": 2, "run_dir": run_dir})

        def kill_one(record: EpisodeRecord) -> None:
            if not killed:
                pid = executor.pids()[0]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        try:
            runner = Runner(config, run_dir, parallel=6, executor=executor, on_episode=kill_one)
            return await runner.run()
        finally:
            await executor.aclose()

    summary = asyncio.run(run())
    assert killed and summary["episodes"]["infra_errors"] == 0
    assert summary["episodes"]["finished"] == 12
    assert _scores(run_dir) == _scores(tmp_path / "reference")
    assert _trajectories(run_dir) == _trajectories(tmp_path / "reference")
    with RunReader(run_dir) as reader:
        retried = [r for r in reader.records() if r.attempts > 1]
    assert retried, "the killed worker had episodes in flight"
    assert all("worker process died" in r.infra_errors[0] for r in retried)
    assert summary["episodes"]["infra_retries"] == len(retried)


@pytest.mark.parametrize(("agent", "ending"), [("random", "infra_error"), (AGENT, "agent_error")])
def test_a_worker_that_keeps_dying_ends_as_its_agent_kind_says(
    suite_dir: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    ending: str,
) -> None:
    """A built-in agent's worker that keeps dying: infra_error after the retries. A
    ``python:`` agent's: each episode runs again alone, and dies alone too: the agent's code
    was in the process, so it is the agent's ``agent_error`` (faults.worker_death_outcome)."""
    monkeypatch.setenv(test_agents.SLEEP_ENV, "0")
    config = _config(suite_dir).model_copy(update={"retries": 0, "epochs": 1, "agent": agent})

    async def run() -> list[EpisodeRecord]:
        executor = ProcessExecutor(Worker(config, None), {"workers": 2})
        monkeypatch.setattr(executor, "_hellos", ['{"config": "not json"}'] * 2)  # dies at once
        try:
            return [await executor.submit(job) for job in _jobs()]
        finally:
            await executor.aclose()

    def _jobs() -> list[Any]:
        from toolproof.engine import plan
        from toolproof.spec import load_suite

        return plan(config, load_suite(config.suite))

    records = asyncio.run(run())
    assert [r.score.termination.value for r in records] == [ending] * 3
    if ending == "infra_error":
        assert all("worker process died: exit" in r.infra_errors[-1] for r in records)
    else:
        assert all("run alone" in r.infra_errors[-1] for r in records)
        errors = [r.trajectory.error or "" for r in records]
        assert all(e.startswith("the agent's process died: exit") for e in errors)


CHILD = """
import asyncio, sys
from pathlib import Path
from toolproof.engine import RunConfig, Runner
config = RunConfig.model_validate_json(sys.argv[1])
asyncio.run(Runner(config, Path(sys.argv[2]), parallel=4,
                   executor_options={"workers": 2}).run())
"""


def test_a_killed_run_with_workers_resumes_to_the_uninterrupted_result(
    suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3
    import subprocess
    import sys
    import time

    monkeypatch.setenv(test_agents.SLEEP_ENV, "0.2")  # 3 waves of >= 0.6 s: killed mid-run
    config = _config(suite_dir)
    run_dir = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, config.model_dump_json(), str(run_dir)], env=env
    )
    try:
        deadline = time.monotonic() + 120
        stored = 0
        while stored < 3:  # kill it once a few episodes are committed
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "nothing was stored within 120 s"
            time.sleep(0.05)
            try:
                with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as conn:
                    (stored,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
            except sqlite3.Error:
                stored = 0
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert stored < 12 and not (run_dir / "summary.json").exists()
    resumed = asyncio.run(
        Runner(config, run_dir, parallel=4, executor_options={"workers": 2}).run()
    )
    asyncio.run(Runner(config, tmp_path / "reference", parallel=4).run())
    assert resumed["episodes"]["finished"] == 12
    assert _scores(run_dir) == _scores(tmp_path / "reference")
    assert _trajectories(run_dir) == _trajectories(tmp_path / "reference")


@pytest.mark.parametrize(
    "output",
    ["not the protocol at all", '{"id":0,"record":{"key": "a#0", "but": "not a record"}}'],
)
@pytest.mark.parametrize(
    ("agent", "ending", "attempts"), [("random", "infra_error", 2), (AGENT, "agent_error", 2)]
)
def test_a_worker_writing_garbage_is_replaced_not_fatal(
    suite_dir: Callable[..., Path],
    output: str,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    ending: str,
    attempts: int,
) -> None:
    """Bytes on the records pipe end the worker, never the run; with a built-in agent it
    is infra (retried), with agent code in the worker the agent's (after a solo run)."""
    import sys

    config = _config(suite_dir).model_copy(update={"retries": 1, "epochs": 1, "agent": agent})
    liar = f"import sys; sys.stdin.readline(); sys.stdin.readline(); print({output!r}, flush=True)"
    real = asyncio.create_subprocess_exec

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        return await real(sys.executable, "-c", liar, **kwargs)

    async def run() -> EpisodeRecord:
        monkeypatch.setattr(asyncio, "create_subprocess_exec", spawn)
        executor = ProcessExecutor(Worker(config, None), {"workers": 1})
        try:
            from toolproof.engine import EpisodeJob

            return await executor.submit(EpisodeJob("a", 0))
        finally:
            await executor.aclose()

    record = asyncio.run(run())
    assert record.score.termination.value == ending and record.attempts == attempts
    assert all("worker process" in error for error in record.infra_errors)


def test_each_worker_loads_only_the_task_files_the_run_selects(
    suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(test_agents.SLEEP_ENV, "0")
    root = suite_dir([make_task(id=task_id) for task_id in ("a", "b", "c")])
    config = RunConfig(suite=str(root), agent=AGENT, epochs=2, seed=9, tasks=["a"])
    worker = Worker(config, None, load_suite(root))  # this process loaded the whole suite
    for other in ("b", "c"):  # then the other tasks' files break: a worker that read them fails
        worker.suite.task_file(other).write_text("id: [not a task\n")
    runner = Runner(
        config, tmp_path / "run", parallel=2, suite=worker.suite, executor_options={"workers": 2}
    )
    summary = asyncio.run(runner.run())
    assert summary["episodes"]["finished"] == 2
    assert summary["episodes"]["infra_errors"] == 0
    assert summary["tasks"]["a"]["episodes"] == 2


def test_the_records_pipe_holds_many_records() -> None:
    fcntl = pytest.importorskip("fcntl")
    getter = getattr(fcntl, "F_GETPIPE_SZ", None)
    if getter is None:
        pytest.skip("no pipe sizes on this system")
    from toolproof.engine._process_main import PIPE_BYTES, _widen_pipe

    read, write = os.pipe()
    try:
        before = fcntl.fcntl(write, getter)
        _widen_pipe(write)
        assert fcntl.fcntl(write, getter) >= min(PIPE_BYTES, max(before, _pipe_max()))
    finally:
        os.close(read)
        os.close(write)


def _pipe_max() -> int:
    try:
        return int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except (OSError, ValueError):
        return 0


def test_the_run_wide_limits_are_shared_out_between_the_workers(
    suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --max-model-calls 3 with 2 workers: at most 3 turns at once in all processes together
    # (2 + 1), not 3 in each; 8 in flight keep every slot busy.
    crowd = tmp_path / "crowd"
    crowd.mkdir()
    monkeypatch.setenv(test_agents.CROWD_ENV, str(crowd))
    config = _config(suite_dir).model_copy(
        update={"agent": "python:toolproof_test_agents:Crowded", "max_model_calls": 3}
    )
    runner = Runner(config, tmp_path / "run", parallel=8, executor_options={"workers": 2})
    summary = asyncio.run(runner.run())
    assert summary["episodes"]["scored"] == 12
    counts = [int(n) for n in (tmp_path / "counts").read_text().split()]
    assert 2 <= max(counts) <= 3, counts


@pytest.mark.parametrize(
    ("workers", "model_calls", "sandboxes", "size", "parts"),
    [
        (2, None, None, 2, [(None, None), (None, None)]),
        (3, 7, None, 3, [(3, None), (2, None), (2, None)]),
        (4, 2, 9, 2, [(1, 5), (1, 4)]),  # no more workers than the smallest limit
        (2, None, 1, 1, [(None, 1)]),
    ],
)
def test_each_worker_gets_a_part_of_the_limits_and_the_parts_add_up(
    suite_dir: Callable[..., Path],
    workers: int,
    model_calls: int | None,
    sandboxes: int | None,
    size: int,
    parts: list[tuple[int | None, int | None]],
) -> None:
    config = _config(suite_dir).model_copy(
        update={"max_model_calls": model_calls, "max_sandboxes": sandboxes}
    )
    executor = ProcessExecutor(Worker(config, None), {"workers": workers})
    assert executor.size == size
    sent = [RunConfig.model_validate_json(json.loads(h)["config"]) for h in executor._hellos]
    assert [(c.max_model_calls, c.max_sandboxes) for c in sent] == parts
    for c in sent:  # the rest of the run's settings as they were
        assert (
            c.model_copy(update={"max_model_calls": model_calls, "max_sandboxes": sandboxes})
            == config
        )


class _Busy:
    """A live worker slot that only counts the jobs it was given (no process)."""

    alive = True

    def __init__(self) -> None:
        self.pending: dict[int, object] = {}


@pytest.mark.parametrize(
    ("workers", "model_calls", "sandboxes", "jobs", "given"),
    [
        (2, 3, None, 9, [6, 3]),  # parts 2 and 1: two jobs to the first for each to the second
        (2, 4, None, 8, [4, 4]),
        (3, 7, 30, 14, [6, 4, 4]),  # by the tighter limit's parts, 3 / 2 / 2
        (2, None, None, 6, [3, 3]),
    ],
)
def test_jobs_go_to_the_workers_in_proportion_to_their_part_of_the_limits(
    suite_dir: Callable[..., Path],
    workers: int,
    model_calls: int | None,
    sandboxes: int | None,
    jobs: int,
    given: list[int],
) -> None:
    config = _config(suite_dir).model_copy(
        update={"max_model_calls": model_calls, "max_sandboxes": sandboxes}
    )
    executor = ProcessExecutor(Worker(config, None), {"workers": workers})
    slots = [_Busy() for _ in range(executor.size)]
    executor._slots = slots  # type: ignore[assignment]

    async def hand_out() -> None:
        for ident in range(jobs):
            chosen = await executor._pick()
            chosen.pending[ident] = None  # type: ignore[assignment]

    asyncio.run(hand_out())
    assert [len(s.pending) for s in slots] == given
