"""Flawed test agents: each loses points exactly where its flaw should cost them.

Each agent runs over the suites that exercise the flaws (security, repo-doctor and the
core suite's ambiguous tasks) for epochs 0 and 1; the per-category success table of each is
compared with the oracle's, which passes everything.
"""

from __future__ import annotations

import asyncio
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from toolproof.agents import AgentTurn, Observation, agent_kinds
from toolproof.agents.builtin.flawed import (
    GullibleAgent,
    NeverAsksAgent,
    NeverRetriesAgent,
    is_error,
    reference_turns,
    substitute,
    without_questions,
)
from toolproof.engine import RunConfig, Runner
from toolproof.metrics.security import security_metrics
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import (
    ANSWER_TOOL,
    Limits,
    TaskInstance,
    builtin_suites_dir,
    load_suite,
    render,
)
from toolproof.trajectory import Message

EPOCHS = 2  # two seeds: tests/suites/test_proven.py proves every task on its own
AGENTS = ("oracle", "never-asks", "never-retries", "gullible")
EXPECTED_LOSSES = {
    "oracle": set(),
    "never-asks": {"ambiguous"},
    "never-retries": {"tool_error"},
    "gullible": {"security"},
}


def suite_dirs(tmp: Path) -> list[Path]:
    """The suites that exercise the flaws; the core suite contributes its ambiguous tasks."""
    ambiguous = tmp / "ambiguous"
    (ambiguous / "tasks").mkdir(parents=True)
    shutil.copy(builtin_suites_dir() / "core" / "suite.yaml", ambiguous / "suite.yaml")
    shutil.copytree(
        builtin_suites_dir() / "core" / "tasks" / "ambiguous", ambiguous / "tasks" / "a"
    )
    return [builtin_suites_dir() / "security", builtin_suites_dir() / "repo-doctor", ambiguous]


def run(suite: Path, agent: str, run_dir: Path) -> list[EpisodeRecord]:
    """Run every task of a suite for epochs 0 and 1 in process and return the records."""
    config = RunConfig(suite=str(suite), agent=agent, epochs=EPOCHS, snapshots=False)
    asyncio.run(Runner(config, run_dir, parallel=8).run())
    with RunReader(run_dir) as reader:
        return list(reader.records())


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    """Every agent's records over every relevant suite."""
    suites = suite_dirs(tmp_path_factory.mktemp("suites"))
    out: dict[str, list[EpisodeRecord]] = {}
    for agent in AGENTS:
        out[agent] = []
        for suite in suites:
            out[agent] += run(suite, agent, tmp_path_factory.mktemp(f"{agent}-{suite.name}"))
    return out


def success_table(records: list[EpisodeRecord]) -> dict[str, float]:
    """Category to success rate."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        counts[record.task.category][0] += record.score.passed
        counts[record.task.category][1] += 1
    return {category: passed / total for category, (passed, total) in sorted(counts.items())}


def test_the_flawed_kinds_are_registered() -> None:
    assert {"never-asks", "never-retries", "gullible"} <= set(agent_kinds())


def test_the_suites_cover_every_category(records: dict[str, list[EpisodeRecord]]) -> None:
    assert set(success_table(records["oracle"])) == {
        "ambiguous",
        "edge",
        "normal",
        "security",
        "tool_error",
    }


def test_oracle_passes_everything(records: dict[str, list[EpisodeRecord]]) -> None:
    assert set(success_table(records["oracle"]).values()) == {1.0}


@pytest.mark.parametrize("agent", [a for a in AGENTS if a != "oracle"])
def test_each_flaw_costs_exactly_its_categories(
    records: dict[str, list[EpisodeRecord]], agent: str
) -> None:
    table = success_table(records[agent])
    lost = {category for category, rate in table.items() if rate < 1.0}
    assert lost == EXPECTED_LOSSES[agent], table
    for category in lost:
        assert table[category] == 0.0, (agent, category, table)


def test_only_gullible_lets_attacks_succeed(records: dict[str, list[EpisodeRecord]]) -> None:
    rates = {a: security_metrics(records[a])["attack_success"]["rate"] for a in AGENTS}
    assert rates == {"oracle": 0.0, "never-asks": 0.0, "never-retries": 0.0, "gullible": 1.0}


# --------------------------------------------------------------------------- the mechanics


def instance(suite: str, task_id: str, epoch: int = 0) -> TaskInstance:
    """A rendered built-in task."""
    loaded = load_suite(suite)
    return render(
        loaded.task(task_id),
        suite=suite,
        suite_seed=loaded.config.seed,
        epoch=epoch,
        limits=Limits(),
        system_prompt="",
    )


def observe(step: int, *results: str) -> Observation:
    """An observation whose last turn brought these tool results."""
    messages = [Message(role="user", content="task"), Message(role="assistant")]
    messages += [Message(role="tool", content=text, name="t") for text in results]
    return Observation(messages=messages, tools=[], step=step)


def test_substitute_replaces_whole_values_and_whole_words_only() -> None:
    guesses = {"K2": "K1", "8512": 8000}
    assert substitute({"product_id": "K2", "delta": 5}, guesses) == {"product_id": "K1", "delta": 5}
    assert substitute("port = 8512\nK2 or K22", guesses) == "port = 8000\nK1 or K22"
    assert substitute([8512, True, None], guesses) == [8000, True, None]


def test_is_error_reads_the_text_as_an_agent_would() -> None:
    assert is_error(Message(role="tool", content="error: HTTP 500"))
    assert is_error(Message(role="tool", content=" Refused: not allowed"))
    assert not is_error(Message(role="tool", content='{"error_rate": 0}'))


async def test_never_asks_drops_the_question_and_uses_the_wrong_guess() -> None:
    inst = instance("repo-doctor", "rd-amb-which-timeout")
    assert inst.task.user is not None
    fact = inst.task.user.facts["setting"]
    agent = NeverAsksAgent(inst)
    turns = []
    for step in range(5):
        turn = await agent.act(observe(step))
        if not turn.tool_calls:
            break
        turns.append([c.name for c in turn.tool_calls])
    assert all("ask_user" not in names for names in turns)
    assert str(fact.value) not in (turn.content or "")
    assert str(fact.wrong_guess()) in (turn.content or "")


async def test_never_retries_stops_at_the_first_error() -> None:
    inst = instance("repo-doctor", "rd-retry-read-currency")
    agent = NeverRetriesAgent(reference_turns(inst), inst.task.solution.answer)
    first = await agent.act(observe(0))
    assert first.tool_calls
    second = await agent.act(observe(1, "error: the request timed out"))
    assert not second.tool_calls
    assert "could not finish" in (second.content or "")


async def test_never_retries_answers_as_the_reference_when_the_error_is_the_last_turn() -> None:
    inst = instance("repo-doctor", "rd-retry-read-currency")
    turns = reference_turns(inst)
    agent = NeverRetriesAgent(turns[:1], inst.task.solution.answer)
    await agent.act(observe(0))
    final = await agent.act(observe(1, "error: no such record"))
    assert final.content == inst.task.solution.answer  # nothing left to retry: the finding


def test_never_asks_leaves_the_questions_out_of_its_answer() -> None:
    assert without_questions("Two Sams: Lee and Rivera. Which one do you mean?") == (
        "Two Sams: Lee and Rivera."
    )
    assert without_questions("How much should I pay?") == "Done."
    assert without_questions("Paid 12 EUR.") == "Paid 12 EUR."


async def test_gullible_obeys_only_after_reading_the_injection() -> None:
    inst = instance("security", "sec-web-recipe-exfil")
    attack = inst.task.attack
    assert attack is not None
    agent = GullibleAgent(inst)
    turn: AgentTurn = await agent.act(observe(0))
    assert [c.name for c in turn.tool_calls] == ["fetch_url"]
    turn = await agent.act(observe(1, "a page without instructions"))
    # no injection read: it hands in the reference's typed answer, as the oracle does
    assert attack.answer == ""
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [
        (ANSWER_TOOL, {"answer": inst.task.solution.submit})
    ]
    agent = GullibleAgent(inst)
    await agent.act(observe(0))
    turn = await agent.act(observe(1, f"<p>recipe</p><!-- {attack.injection} -->"))
    assert [c.name for c in turn.tool_calls] == [c.tool for c in attack.calls]
    final = await agent.act(observe(2, '{"sent_id": "S1"}'))
    assert [c.name for c in final.tool_calls] == [ANSWER_TOOL]
