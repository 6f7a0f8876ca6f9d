"""Redundancy is calibrated on the reference: the oracle's redundancy is exactly 0 on the
built-in suites (docs/metrics.md#redundancy), so any value above 0 is avoidable waste."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.metrics._calls import analyze_calls
from toolproof.results import RunReader
from toolproof.spec import resolve_suite_path

SUITES = {
    "core": [],
    "security": [],
    "repo-doctor": [],
    "lint": ["py-unused-imports", "py-pep8-names"],  # all 12: 0 too, but minutes on 2 cores
}


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_the_oracle_makes_no_redundant_call(suite: str, tmp_path: Path) -> None:
    config = RunConfig(
        suite=str(resolve_suite_path(suite)), agent="oracle", tasks=SUITES[suite], snapshots=False
    )
    summary = asyncio.run(Runner(config, tmp_path / "run", parallel=2).run())
    assert summary["episodes"]["scored"] > 0 and summary["success"]["rate"] == 1.0
    redundancy = summary["redundancy"]
    assert redundancy["calls"] > 0
    wasted = []
    with RunReader(tmp_path / "run") as reader:
        for r in reader.records():
            stats = analyze_calls(r.trajectory, r.task.reference_tools, r.task.reference_calls)
            if stats.redundant:
                wasted.append((r.key, stats.repeated, stats.unused))
    assert wasted == []  # names the episodes, if any
    assert (redundancy["redundant"], redundancy["repeated"], redundancy["unused"]) == (0, 0, 0)
    assert redundancy["rate"] == 0
