"""``Runner.request_stop``: stop soon, keep what finished, still write a summary."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord
from toolproof.spec import resolve_suite_path


def test_a_stop_request_reaches_agents_that_never_yield(tmp_path: Path) -> None:
    # The oracle never suspends: without a turn for the loop between episodes, the stop
    # (a loop callback) would wait for all 3100 episodes.
    config = RunConfig(suite=str(resolve_suite_path("core")), agent="oracle", epochs=20)
    runner = Runner(config, tmp_path / "run", parallel=4)
    seen: list[str] = []

    def on_episode(record: EpisodeRecord) -> None:
        seen.append(record.key)
        if len(seen) == 3:
            runner.request_stop()

    runner.on_episode = on_episode
    summary = asyncio.run(runner.run())
    episodes = summary["episodes"]
    assert runner.stopped
    assert episodes["complete"] is False
    assert 3 <= episodes["finished"] == len(seen) <= 3 + 4  # at most the ones in flight
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["episodes"] == episodes
    lines = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == len(seen)
