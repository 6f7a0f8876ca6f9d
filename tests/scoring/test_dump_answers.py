"""An agent that answers with everything it saw passes nothing (core, security, hard).

``DumpsEverything`` (``scoring/broken_agents.py``) calls every argument-free tool and
answers with every value it read, one per line: every id, date and name of the world is
in its answer, so it contains whatever the check expects. It once scored ``perfect`` on
four core tasks (the digits of ids stated a count, a dump of dates or ids was not a
hedge for dates and regex checks) and ``partial`` on which-one tasks through evidence
named in the dump.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.spec import resolve_suite_path


@pytest.mark.parametrize(("suite", "tasks"), [("core", 150), ("security", 20), ("hard", 90)])
def test_a_dump_of_everything_seen_passes_no_built_in_task(
    suite: str, tasks: int, tmp_path: Path
) -> None:
    config = RunConfig(
        suite=str(resolve_suite_path(suite)),
        agent="python:scoring.broken_agents:DumpsEverything",
        snapshots=False,
    )
    asyncio.run(Runner(config, tmp_path / "run", parallel=8).run())
    with RunReader(tmp_path / "run") as reader:
        records = list(reader.records())
    assert len(records) >= tasks
    passed = sorted(r.key for r in records if r.score.passed)
    assert passed == []
    # What it may keep: half the credit where a task's other check is a state change it
    # did not make, or a two-option choice (naming both of two is not a dump).
    assert all(r.score.fraction <= 0.5 for r in records), [
        (r.key, r.score.fraction) for r in records if r.score.fraction > 0.5
    ]
