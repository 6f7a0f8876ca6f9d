"""Time travel: restoring step N gives back exactly what step N recorded."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from toolproof.engine import RunConfig, Runner, export_step, load_step, replay_step
from toolproof.results import RunReader
from toolproof.spec import SpecError, resolve_suite_path


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("runs") / "oracle"
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent="oracle",
        tasks=["update-config", "hello-file", "restock-product"],
    )
    asyncio.run(Runner(config, run_dir, parallel=2).run())
    return run_dir


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("task_id", ["update-config", "hello-file", "restock-product"])
def test_every_step_restores_byte_for_byte(oracle_run: Path, task_id: str, tmp_path: Path) -> None:
    with RunReader(oracle_run) as reader:
        record = reader.record(f"{task_id}#0")
    assert record is not None
    for step in range(len(record.trajectory.steps) + 1):
        state = load_step(oracle_run, task_id, step)
        out = export_step(oracle_run, task_id, step, tmp_path / f"step{step}")
        recorded_files = {rel: entry[0] for rel, entry in state.snapshot.files.items()}
        restored = _tree(out / "workspace") if (out / "workspace").exists() else {}
        assert restored == recorded_files
        assert json.loads((out / "records.json").read_text()) == state.snapshot.records


def test_restored_states_follow_the_episode(oracle_run: Path, tmp_path: Path) -> None:
    before = export_step(oracle_run, "hello-file", 0, tmp_path / "s0")
    after = export_step(oracle_run, "hello-file", 2, tmp_path / "s2")
    assert not (before / "workspace" / "data" / "hello.txt").exists()
    assert (after / "workspace" / "data" / "hello.txt").read_text() == "Hello, AgentBench!"
    stock_0 = load_step(oracle_run, "restock-product", 0).snapshot.records
    stock_2 = load_step(oracle_run, "restock-product", 2).snapshot.records
    assert stock_0 != stock_2


def test_replay_continues_as_a_linked_episode(oracle_run: Path, tmp_path: Path) -> None:
    record = asyncio.run(replay_step(oracle_run, "hello-file", 1, "oracle", tmp_path / "replay"))
    assert record.trajectory.parent == "hello-file#0@1"
    assert record.score.passed
    original_first = load_step(oracle_run, "hello-file", 1).record.trajectory.steps[0]
    assert record.trajectory.steps[0].message == original_first.message
    noop = asyncio.run(replay_step(oracle_run, "hello-file", 1, "noop", tmp_path / "noop"))
    assert not noop.score.passed
    assert len(noop.trajectory.steps) == 2  # the kept step, then noop's answer
    # The replay run keeps its own snapshots, so it can be travelled too.
    again = export_step(tmp_path / "replay", "hello-file", 2, tmp_path / "again")
    assert (again / "workspace" / "data" / "hello.txt").read_text() == "Hello, AgentBench!"


def test_step_out_of_range_is_a_clear_error(oracle_run: Path) -> None:
    with pytest.raises(SpecError, match=r"has steps 0\.\.3, not 7"):
        load_step(oracle_run, "hello-file", 7)
