"""The ``amb-*`` tasks of the core suite (``tasks/ambiguous/``): only the user knows a fact.

They run here as a suite of their own (the core suite's ``suite.yaml`` plus that folder),
so these tests do not depend on the rest of the core suite.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import Limits, ProcessCheck, Suite, builtin_suites_dir, load_suite, render

EPOCHS = 3
AMBIGUOUS = builtin_suites_dir() / "core" / "tasks" / "ambiguous"


def ambiguous_suite(root: Path) -> Path:
    """A suite directory holding the core suite's settings and only the ambiguous tasks."""
    shutil.copy(builtin_suites_dir() / "core" / "suite.yaml", root / "suite.yaml")
    shutil.copytree(AMBIGUOUS, root / "tasks" / "ambiguous")
    return root


def run(suite_dir: Path, agent: str, run_dir: Path) -> list[EpisodeRecord]:
    """Run every task for epochs 0..2 in process and return the records."""
    config = RunConfig(suite=str(suite_dir), agent=agent, epochs=EPOCHS, snapshots=False)
    asyncio.run(Runner(config, run_dir, parallel=8).run())
    with RunReader(run_dir) as reader:
        return list(reader.records())


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ambiguous tasks as a suite directory."""
    return ambiguous_suite(tmp_path_factory.mktemp("ambiguous"))


@pytest.fixture(scope="module")
def suite(suite_dir: Path) -> Suite:
    """The loaded ambiguous tasks."""
    return load_suite(suite_dir)


@pytest.fixture(scope="module")
def runs(
    suite_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[EpisodeRecord]]:
    """Records of oracle, noop, random and never-asks."""
    return {
        agent: run(suite_dir, agent, tmp_path_factory.mktemp(agent))
        for agent in ("oracle", "noop", "random", "never-asks")
    }


def test_there_are_enough_ambiguous_tasks_and_they_are_named_so(suite: Suite) -> None:
    assert len(suite.tasks) >= 15
    for task in suite.tasks:
        assert task.id.startswith("amb-"), task.id
        assert task.category == "ambiguous", task.id


def test_every_task_has_a_user_reached_through_ask_user(suite: Suite) -> None:
    for task in suite.tasks:
        assert task.user is not None, task.id
        assert "ask_user" in map(str, task.tools), task.id
        asks = [
            c for c in task.success if isinstance(c, ProcessCheck) and "ask_user" in c.must_call
        ]
        assert asks, f"{task.id}: a right answer without asking is a lucky guess"


def test_the_reference_question_gets_every_fact_and_a_vague_one_gets_none(suite: Suite) -> None:
    for task in suite.tasks:
        assert task.user is not None
        questions = [
            c.args["question"]
            for item in task.solution.calls
            for c in (item if isinstance(item, list) else [item])
            if c.tool == "ask_user"
        ]
        assert questions, task.id
        revealed = {
            fact
            for q in questions
            for topic in task.user.topics
            if topic.matches(q)
            for fact in topic.reveals
        }
        assert revealed == set(task.user.facts), task.id
        reply, topics = task.user.scripted_reply("Can you help me?")
        assert topics == [] and reply == task.user.default_reply, task.id


def test_the_missing_fact_is_drawn_from_the_seed_and_guessable_wrong(suite: Suite) -> None:
    for template in suite.tasks:
        values = set()
        for epoch in range(12):
            task = render(
                template,
                suite=suite.name,
                suite_seed=suite.config.seed,
                epoch=epoch,
                limits=Limits(),
                system_prompt="",
            ).task
            assert task.user is not None
            for fact in task.user.facts.values():
                assert len(fact.alternatives) >= 2, template.id
                assert fact.wrong_guess() is not None, template.id
            values.add(tuple(str(f.value) for f in task.user.facts.values()))
        assert len(values) > 1, f"{template.id}: the fact never changes, so it can be memorised"


def test_oracle_passes_every_task(runs: dict[str, list[EpisodeRecord]], suite: Suite) -> None:
    assert len(runs["oracle"]) == len(suite.tasks) * EPOCHS
    assert [r.key for r in runs["oracle"] if not r.score.passed] == []


@pytest.mark.parametrize("agent", ["noop", "random", "never-asks"])
def test_doing_nothing_or_guessing_passes_nothing(
    runs: dict[str, list[EpisodeRecord]], agent: str
) -> None:
    assert [r.key for r in runs[agent] if r.score.passed] == []


def test_the_oracle_trajectory_records_who_answered(runs: dict[str, list[EpisodeRecord]]) -> None:
    replies = [
        result.content
        for record in runs["oracle"]
        for _, result in record.trajectory.tool_calls()
        if result is not None and result.name == "ask_user"
    ]
    assert replies and all('"answered_by": "scripted"' in r for r in replies)
