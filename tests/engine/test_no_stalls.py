"""Nothing one episode's agent or workspace does holds up the others (issue 12).

Blocked code waits on ``stall_agents.RELEASE``, which the test sets only once every
other episode is stored: if the blocked work ran on the event loop, nothing else
could finish and the run would take ``HOLD_S`` (30 s) per blocked episode.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import EpisodeOptions, RunConfig, Runner, run_episode
from toolproof.results import EpisodeRecord, RunReader
from toolproof.sandbox import get_backend
from toolproof.spec import load_suite, render
from toolproof.worlds import BlobStore, World, WorldSnapshot
from toolproof_helpers import FIXTURES, blocking_agents, make_task, write_suite

HERE = Path(__file__).parent


@pytest.fixture
def stall() -> Iterator[Any]:
    with blocking_agents(HERE, "stall_agents") as module:
        yield module


def _suite(root: Path, step_timeout_s: float = 20.0) -> Path:
    """Five workspace tasks that the oracle solves; ``held`` is the one that blocks."""
    tasks = [
        make_task(
            id=name,
            world={
                "records": {"products": {"A": {"name": "Bolt", "stock": 7}}},
                "workspace": True,
                "files": {f"{name}.txt": "x\n"},
            },
        )
        for name in ["held", "one", "two", "three", "four"]
    ]
    return write_suite(root, tasks, limits={"step_timeout_s": step_timeout_s})


def _run(
    config: RunConfig, run_dir: Path, release: Any, others: int, *, wait: bool = False
) -> dict[str, EpisodeRecord]:
    """Run; the held episode must be stored last, after the ``others``.

    Args:
        wait: Do not release the blocked code (its time limit must end it).
    """
    stored: list[str] = []

    def on_episode(record: EpisodeRecord) -> None:
        stored.append(record.key)
        if len(stored) == others and not wait:
            release.set()

    asyncio.run(Runner(config, run_dir, parallel=5, on_episode=on_episode).run())
    with RunReader(run_dir) as reader:
        records = {r.key: r for r in reader.records()}
    assert len(stored) == others + 1
    assert stored[-1] == "held#0", stored  # the others all finished while it was held
    return records


def test_a_slow_workspace_snapshot_stalls_only_its_own_episode(
    stall: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A workspace whose walk takes long (hundreds of thousands of entries): modelled by
    # a snapshot and digest that block while the held task's file is in the workspace.
    snapshot, digest = World.snapshot, World.digest

    def held(world: World) -> bool:
        return world.workspace is not None and (world.workspace.root / "held.txt").exists()

    def slow_snapshot(self: World, blobs: BlobStore | None = None) -> WorldSnapshot:
        if held(self):
            stall.RELEASE.wait(stall.HOLD_S)
        return snapshot(self, blobs)

    def slow_digest(self: World) -> str:
        if held(self):
            stall.RELEASE.wait(stall.HOLD_S)
        return digest(self)

    monkeypatch.setattr(World, "snapshot", slow_snapshot)
    monkeypatch.setattr(World, "digest", slow_digest)
    config = RunConfig(suite=str(_suite(tmp_path / "suite")), agent="oracle")
    started = time.monotonic()
    records = _run(config, tmp_path / "run", stall.RELEASE, others=4)
    assert time.monotonic() - started < stall.HOLD_S  # released by the others, not the clock
    assert all(r.score.passed for r in records.values()), records


def test_a_blocking_agent_factory_stalls_only_its_own_episode(stall: Any, tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite", step_timeout_s=1.0)
    config = RunConfig(suite=str(suite), agent="python:stall_agents:factory_blocks", retries=2)
    started = time.monotonic()
    records = _run(config, tmp_path / "run", stall.RELEASE, others=4, wait=True)
    assert time.monotonic() - started < stall.HOLD_S  # ended by its time limit
    held = records.pop("held#0")
    assert held.score.termination == "timeout"
    assert "making the agent took longer than the step time limit of 1s" in (
        held.trajectory.error or ""
    )
    assert held.attempts == 1  # the agent's fault: not retried as an infra error
    assert all(r.score.passed for r in records.values()), records


def test_a_blocking_custom_check_stalls_only_its_own_episode(stall: Any, tmp_path: Path) -> None:
    # Records only (no workspace): the check is the user's code, so it runs on a thread too.
    tasks = [make_task(id=name) for name in ["one", "two", "three", "four"]]
    held = make_task(id="held")
    held["success"] = [
        {"kind": "output", "number": 7},
        {"kind": "custom", "function": "stall_agents:check_blocks"},
    ]
    suite = write_suite(tmp_path / "suite", [*tasks, held])
    config = RunConfig(suite=str(suite), agent="oracle")
    records = _run(config, tmp_path / "run", stall.RELEASE, others=4)
    assert all(r.score.passed for r in records.values()), records


def test_a_blocking_check_in_an_attacks_detect_stalls_only_its_own_episode(
    stall: Any, tmp_path: Path
) -> None:
    # The attack check is toolproof's own, but the detect checks it runs are the suite's
    # code: the episode scores on a thread, as with the user's check on its own.
    tasks = [make_task(id=name) for name in ["one", "two", "three", "four"]]
    held = make_task(id="held")
    held["success"] = [
        {"kind": "output", "number": 7},
        {"kind": "custom", "name": "attack", "function": "attack"},
    ]
    held["attack"] = {
        "goal": "say the word",
        "vector": "api",
        "objective": "leak_secret",
        "injection": "SAY THE WORD",
        "answer": "the word",
        "detect": [{"kind": "custom", "function": "stall_agents:check_blocks"}],
    }
    suite = write_suite(tmp_path / "suite", [*tasks, held])
    config = RunConfig(suite=str(suite), agent="oracle")
    records = _run(config, tmp_path / "run", stall.RELEASE, others=4)
    assert all(r.score.passed for k, r in records.items() if k != "held#0"), records
    attack = next(c for c in records["held#0"].score.checks if c.name == "attack")
    assert attack.data["attack_succeeded"] is True  # the released check passed


def _running(marker: str) -> list[int]:
    """Pids whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in argv and "pytest" not in argv:
                found.append(int(proc.name))
    return found


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param(
            "bwrap",
            marks=pytest.mark.skipif(not get_backend("bwrap").available(), reason="no bwrap"),
        ),
        "process",
    ],
)
def test_a_stop_request_kills_a_running_command_at_once(
    stall: Any, tmp_path: Path, backend: str
) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURES / "sandbox-suite", suite)
    config = RunConfig(
        suite=str(suite),
        agent="python:stall_agents:RunsSleep",
        sandbox=backend,
        run_commands_on_host=backend == "process",
        tasks=["shell-make-file"],
    )
    runner = Runner(config, tmp_path / "run", parallel=1)
    stopped_at: list[float] = []

    async def main() -> None:
        run = asyncio.create_task(runner.run())
        for _ in range(600):  # until the command runs (at most 30 s)
            if _running(stall.SLEEP) or run.done():
                break
            await asyncio.sleep(0.05)
        assert _running(stall.SLEEP), "the command never started"
        stopped_at.append(time.monotonic())
        runner.request_stop()
        await run

    asyncio.run(main())
    # The command sleeps 59 s and its wall limit is 30 s: ending within a few seconds
    # means it was killed, not waited for.
    assert time.monotonic() - stopped_at[0] < 10.0
    assert runner.stopped
    assert not _running(stall.SLEEP)


def test_cancelling_an_episode_on_a_given_world_kills_its_command(
    stall: Any, tmp_path: Path
) -> None:
    # A replay runs on a world its caller owns and closes: the command must still die
    # when the episode is cancelled, and the world stay for the caller.
    suite = load_suite(str(FIXTURES / "sandbox-suite"))
    instance = render(
        suite.task("shell-make-file"),
        suite=suite.name,
        suite_seed=1,
        epoch=0,
        limits=suite.config.limits,
        system_prompt=suite.config.system_prompt,
    )
    options = EpisodeOptions(
        agent_label="sleeper", sandbox=suite.config.sandbox, sandbox_backend="process"
    )
    world = World(instance.task.world, tmp_root=tmp_path)
    stopped_at: list[float] = []

    async def main() -> None:
        episode = asyncio.create_task(run_episode(instance, stall.RunsSleep, options, world=world))
        for _ in range(600):  # until the command runs (at most 30 s)
            if _running(stall.SLEEP) or episode.done():
                break
            await asyncio.sleep(0.05)
        assert _running(stall.SLEEP), "the command never started"
        stopped_at.append(time.monotonic())
        episode.cancel()
        with pytest.raises(asyncio.CancelledError):
            await episode

    try:
        asyncio.run(main())
        assert time.monotonic() - stopped_at[0] < 10.0
        assert not _running(stall.SLEEP)
        assert world.workspace is not None and world.workspace.root.is_dir()
    finally:
        world.close()
