"""AgentDojo inside toolproof: agreement with AgentDojo's own verdicts, oracle, gullible, hostile input.

The oracle's utility on every user task must equal what AgentDojo's own
``GroundTruthPipeline`` scores through ``TaskSuite.run_task_with_pipeline`` (a few
tasks fail upstream too: :data:`UPSTREAM_GROUND_TRUTH_FAILS`). Under an attack, the
``gullible`` agent's episodes are replayed inside AgentDojo (the same calls in the
same order, on AgentDojo's own environment, loaded by AgentDojo's own loader), and
toolproof's utility and security verdicts must equal AgentDojo's. CI runs a fixed
sample of pairs per suite; ``TOOLPROOF_AGENTDOJO_ALL=1`` runs every pair.
"""

from __future__ import annotations

import asyncio
import os
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

try:
    metadata.version("agentdojo")
    INSTALLED = True
except metadata.PackageNotFoundError:
    INSTALLED = False

pytestmark = pytest.mark.skipif(
    not INSTALLED,
    reason="agentdojo not installed: pip install --no-deps 'agentdojo==0.1.35' "
    "'deepdiff==8.6.1' orderly-set email-validator dnspython python-dotenv",
)

from toolproof.engine import RunConfig, Runner  # noqa: E402
from toolproof.results import EpisodeRecord, RunReader  # noqa: E402

SUITES = ("banking", "slack", "travel", "workspace")
ALL = os.environ.get("TOOLPROOF_AGENTDOJO_ALL") == "1"
UPSTREAM_GROUND_TRUTH_FAILS: set[str] = set()
"""User tasks whose own ground truth AgentDojo's GroundTruthPipeline scores as failed: none
at v1.2.2 (earlier benchmark versions had some; the oracle matches whatever it scores)."""
SAMPLE = ["*.user_task_0", "*.user_task_1", "*.user_task_2", "*.user_task_13"]
"""The user tasks CI runs (every one with TOOLPROOF_AGENTDOJO_ALL=1)."""


def _run(suite: str, agent: str, out: Path, tasks: list[str] | None = None) -> list[EpisodeRecord]:
    config = RunConfig(suite=suite, agent=agent, tasks=tasks or [])
    asyncio.run(Runner(config, out, parallel=4).run())
    with RunReader(out) as reader:
        return [r for r in (reader.record(row["key"]) for row in reader.rows()) if r is not None]


def _check(record: EpisodeRecord, name: str) -> Any:
    return next(c for c in record.score.checks if c.name == name)


@cache
def _upstream() -> Any:
    from toolproof.upstream import _agentdojo_upstream as upstream

    return upstream


def test_oracle_scores_what_the_ground_truth_pipeline_scores(tmp_path: Path) -> None:
    upstream = _upstream()
    mods = upstream.modules()
    records = _run("agentdojo", "oracle", tmp_path / "run", None if ALL else SAMPLE)
    if ALL:
        assert len(records) == sum(len(upstream.suites()[s].user_tasks) for s in SUITES) == 97
    fails: set[str] = set()
    for record in records:
        suite_name, task_id = record.task.id.split(".", 1)
        suite = upstream.suites()[suite_name]
        user_task = suite.get_user_task_by_id(task_id)
        expected, _ = suite.run_task_with_pipeline(
            mods.GroundTruthPipeline(user_task), user_task, None, {}
        )
        assert record.score.termination == "completed", record.task.id
        assert _check(record, "agentdojo_utility").passed is expected, record.task.id
        if not expected:
            fails.add(record.task.id)
    assert fails == {f for f in UPSTREAM_GROUND_TRUTH_FAILS if f in {r.task.id for r in records}}
