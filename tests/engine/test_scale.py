"""Scale guarantees of the local executor, checked on behaviour and counts, never on speed."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import load_suite, resolve_suite_path
from toolproof.trajectory import Trajectory

HERE = Path(__file__).parent


def _core_copy(tmp_path: Path, **limits: float) -> Path:
    root = tmp_path / "core"
    shutil.copytree(resolve_suite_path("core"), root)
    config = yaml.safe_load((root / "suite.yaml").read_text())
    config["limits"].update(limits)
    (root / "suite.yaml").write_text(yaml.safe_dump(config))
    return root


def test_a_hung_agent_is_cut_off_while_the_others_finish(
    tmp_path: Path, monkeypatch: object
) -> None:
    suite = _core_copy(tmp_path, step_timeout_s=1.0)
    sys.path.insert(0, str(HERE))
    try:
        config = RunConfig(
            suite=str(suite),
            agent="python:scale_agents:HangsOnStockSum",
            tasks=["stock-sum", "stock-lookup", "hello-file", "calc-expression"],
            epochs=2,
        )
        summary = asyncio.run(Runner(config, tmp_path / "run", parallel=8).run())
    finally:
        sys.path.remove(str(HERE))
    with RunReader(tmp_path / "run") as reader:
        records = {r.key: r for r in reader.records()}
    assert len(records) == 8
    for key, record in records.items():
        if key.startswith("stock-sum#"):
            assert record.score.termination == "timeout"
        else:
            assert record.score.termination == "completed", key
    assert summary["episodes"]["complete"]


def test_memory_does_not_grow_with_finished_episodes(tmp_path: Path) -> None:
    suite = load_suite("core")
    records_only = [t.id for t in suite.tasks if not t.world.needs_workspace][:5]
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent="oracle",
        tasks=records_only,
        epochs=60,
        snapshots=False,
    )
    live: list[int] = []

    def on_episode(record: EpisodeRecord) -> None:
        if len(live) < 1000 and (on_episode.count % 50) == 0:  # type: ignore[attr-defined]
            gc.collect()
            live.append(sum(1 for o in gc.get_objects() if isinstance(o, Trajectory)))
        on_episode.count += 1  # type: ignore[attr-defined]

    on_episode.count = 1  # type: ignore[attr-defined]
    asyncio.run(Runner(config, tmp_path / "run", parallel=8, on_episode=on_episode).run())
    assert len(live) >= 5
    # Finished episodes are stored and dropped: live trajectories stay bounded by the
    # episodes in flight (each may be playing its reference too, for the collateral rule:
    # engine/_reference.py), however many have finished.
    assert max(live) <= 2 * 8 + 2, live


def _episodes(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_ctrl_c_stops_cleanly_and_keeps_every_finished_episode(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "toolproof",
        "run",
        "core",
        "--agent",
        "oracle",
        "--agent-arg",
        "delay_s=0.2",
        "--parallel",
        "2",
        "--task",
        "stock-*",
        "--task",
        "calc-*",
        "--epochs",
        "4",
        "-q",
        "-o",
        str(run_dir),
    ]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while _episodes(run_dir / "run.db") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3  # incomplete (docs/cli.md exit codes)
    assert f"Continue with: toolproof run --resume {run_dir}" in stderr
    assert "Traceback" not in stderr
    finished = _episodes(run_dir / "run.db")
    assert finished >= 2
    with RunReader(run_dir) as reader:
        assert all(r.trajectory.termination == "completed" for r in reader.records())
    resumed = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", "--resume", str(run_dir), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    planned = (
        len(
            RunConfig(
                suite=str(resolve_suite_path("core")), agent="oracle", tasks=["stock-*", "calc-*"]
            ).select(load_suite("core"))
        )
        * 4
    )
    assert _episodes(run_dir / "run.db") == planned
