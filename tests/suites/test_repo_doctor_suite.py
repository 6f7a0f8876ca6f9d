"""The built-in ``repo-doctor`` suite: questions about a fixture repository, proven by agents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import ScriptedAgent, reference_turns
from toolproof.engine import RunConfig, Runner
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import (
    EvidenceCheck,
    Limits,
    OutputCheck,
    Suite,
    Task,
    load_suite,
    render,
    resolve_suite_path,
)

EPOCHS = 3
CATEGORIES = {"normal", "edge", "tool_error", "ambiguous", "security"}


def run_suite(suite: str, agent: str, run_dir: Path) -> list[EpisodeRecord]:
    """Run every task of a suite for epochs 0..2 in process and return the records."""
    config = RunConfig(
        suite=str(resolve_suite_path(suite)), agent=agent, epochs=EPOCHS, snapshots=False
    )
    asyncio.run(Runner(config, run_dir, parallel=8).run())
    with RunReader(run_dir) as reader:
        return list(reader.records())


@pytest.fixture(scope="module")
def suite() -> Suite:
    """The loaded repo-doctor suite."""
    return load_suite("repo-doctor")


@pytest.fixture(scope="module")
def repo(suite: Suite) -> Path:
    """The fixture repository every task starts from."""
    return suite.root / "fixtures" / "shop-service"


@pytest.fixture(scope="module")
def repo_text(repo: Path) -> str:
    """Every file of the fixture repository, concatenated, lowercased."""
    return "\n".join(p.read_text(encoding="utf-8") for p in repo.rglob("*") if p.is_file()).lower()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    """Records of oracle, noop and random over the whole suite."""
    return {
        agent: run_suite("repo-doctor", agent, tmp_path_factory.mktemp(agent))
        for agent in ("oracle", "noop", "random")
    }


def output_check(task: Task, name: str) -> OutputCheck:
    """The task's output check of that name."""
    found = [c for c in task.success if isinstance(c, OutputCheck) and c.name == name]
    assert len(found) == 1, (task.id, name)
    return found[0]


def evidence_check(task: Task) -> EvidenceCheck:
    """The task's single evidence check."""
    found = [c for c in task.success if isinstance(c, EvidenceCheck)]
    assert len(found) == 1, task.id
    return found[0]


def test_the_fixture_is_a_realistic_small_repository(repo: Path) -> None:
    files = [p for p in repo.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert 20 <= len(files) <= 40
    names = {p.relative_to(repo).as_posix() for p in files}
    for expected in (
        ".env",
        "README.md",
        "shopsvc/payments/service.py",
        "shopsvc/tests/test_refunds.py",
    ):
        assert expected in names
    assert "STRIPE_SECRET_KEY=sk_live_" in (repo / ".env").read_text(encoding="utf-8")


def test_the_suite_covers_every_category(suite: Suite) -> None:
    assert len(suite.tasks) >= 15
    assert {t.category.value for t in suite.tasks} == CATEGORIES
    assert suite.config.version == "1.0.0"


def test_every_task_uses_the_file_tools_on_the_fixture(suite: Suite) -> None:
    for task in suite.tasks:
        assert task.world.fixtures == "../fixtures/shop-service", task.id
        assert {"list_files", "read_file", "search_files"} <= set(map(str, task.tools)), task.id


def test_every_task_names_a_real_expected_file_and_real_evidence(
    suite: Suite, repo: Path, repo_text: str
) -> None:
    for epoch in range(EPOCHS):
        for template in suite.tasks:
            task = render(
                template,
                suite=suite.name,
                suite_seed=suite.config.seed,
                epoch=epoch,
                limits=Limits(),
                system_prompt="",
            ).task
            paths = [s for s in output_check(task, "expected_file").contains if s.endswith(".py")]
            assert paths, task.id
            assert all((repo / p).is_file() for p in paths), (task.id, paths)
            evidence = evidence_check(task)
            assert evidence.require and evidence.forbid, task.id
            for text in evidence.require:
                assert text.lower() in repo_text, (task.id, text)


def test_forbidden_strings_are_invented_names_or_secrets(suite: Suite, repo_text: str) -> None:
    for epoch in range(EPOCHS):
        for template in suite.tasks:
            task = render(
                template,
                suite=suite.name,
                suite_seed=suite.config.seed,
                epoch=epoch,
                limits=Limits(),
                system_prompt="",
            ).task
            secrets = task.world.files.get(".env", "").lower() + repo_text.split("# local")[0]
            for text in evidence_check(task).forbid:
                if (
                    task.category == "security"
                    and text.lower() in (task.world.files.get(".env", "") + repo_text).lower()
                ):
                    continue  # a secret the question lures the agent into echoing
                assert text.lower() not in repo_text, (task.id, text)
                assert text.lower() not in secrets, (task.id, text)


def test_security_questions_forbid_the_secret_of_each_epoch(suite: Suite) -> None:
    for template in (t for t in suite.tasks if t.category == "security"):
        assert template.attack is not None
        for epoch in range(EPOCHS):
            task = render(
                template,
                suite=suite.name,
                suite_seed=suite.config.seed,
                epoch=epoch,
                limits=Limits(),
                system_prompt="",
            ).task
            env = task.world.files[".env"]
            leaked = [s for s in evidence_check(task).forbid if s in env]
            assert leaked, (task.id, epoch)


def test_tool_error_tasks_break_the_file_tools(suite: Suite) -> None:
    for task in (t for t in suite.tasks if t.category == "tool_error"):
        assert task.faults, task.id
        assert {f.tool for f in task.faults} <= {"read_file", "search_files"}, task.id


def test_ambiguous_tasks_need_the_user(suite: Suite) -> None:
    for task in (t for t in suite.tasks if t.category == "ambiguous"):
        assert task.user is not None and "ask_user" in map(str, task.tools), task.id


def test_oracle_passes_every_task(runs: dict[str, list[EpisodeRecord]], suite: Suite) -> None:
    records = runs["oracle"]
    assert len(records) == len(suite.tasks) * EPOCHS
    assert [r.key for r in records if not r.score.passed] == []


@pytest.mark.parametrize("agent", ["noop", "random"])
def test_noop_and_random_pass_nothing(runs: dict[str, list[EpisodeRecord]], agent: str) -> None:
    assert [r.key for r in runs[agent] if r.score.passed] == []


@pytest.mark.parametrize(
    ("task_id", "invented"),
    [("rd-payment-logic", "PaymentProcessor"), ("rd-order-total", "calculate_total")],
)
def test_one_invented_name_zeroes_a_right_answer(suite: Suite, task_id: str, invented: str) -> None:
    inst = render(
        suite.task(task_id),
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=0,
        limits=Limits(),
        system_prompt="",
    )
    answer = f"{inst.task.solution.answer} It calls {invented}() as well."

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent(reference_turns(inst), answer)  # the test plays the key itself

    options = EpisodeOptions(
        agent_label="hallucinator", fixtures_base=suite.task_file(task_id).parent
    )
    _, score = asyncio.run(run_episode(inst, factory, options))
    assert not score.passed
    assert score.fraction == 0.0
    assert any(c.veto and invented in c.detail for c in score.checks)
