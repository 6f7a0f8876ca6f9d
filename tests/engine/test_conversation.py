"""A user in conversation (``user.mode: conversation``): the episode opens with the user's
message, the agent's replies go to the user (scripted, or a model through the gateway),
until the user says ###STOP###, ``max_turns`` runs out or the agent falls silent."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof import gateway
from toolproof.agents import AgentTurn, Observation
from toolproof.agents.builtin.flawed import (
    NeverAsksAgent,
    NeverRetriesAgent,
    later_plays,
    reference_turns,
)
from toolproof.agents.builtin.oracle import OracleAgent
from toolproof.engine import EpisodeOptions, RunConfig, Runner, run_episode
from toolproof.engine.side_models import SideModels
from toolproof.engine.turns import refuse_driven
from toolproof.results import EpisodeRecord, RunReader
from toolproof.scoring import Score
from toolproof.spec import (
    Limits,
    SpecError,
    Task,
    TaskInstance,
    builtin_suites_dir,
    load_suite,
    render,
)
from toolproof.spec.user import STOP_TOKEN, UserSpec
from toolproof.testing import (
    ChatRequest,
    ModelServer,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
)
from toolproof.trajectory import Termination, ToolCall, Trajectory
from toolproof.users import GREETING, MAX_REPLY_CHARS
from toolproof_helpers import make_task, run_single, write_suite

USER: dict[str, Any] = {
    "mode": "conversation",
    "persona": "A shop clerk.",
    "goal": "Product A gets the units the clerk means.",
    "max_turns": 3,
    "facts": {"delta": {"value": 5, "about": "how many units to add"}},
    "topics": [{"keywords": ["how many", "units"], "reply": "Add 5 units.", "reveals": ["delta"]}],
}

ADD = {"tool": "adjust_stock", "args": {"product_id": "A", "delta": 5}}


def _task(**user: Any) -> dict[str, Any]:
    return make_task(
        type="multi_step",
        description="I need to restock product A.",
        user={**USER, **user},
        success=[
            {"kind": "state", "records": {"products.A.stock": 12}},
            {"kind": "output", "number": 12},
        ],
        solution={
            "calls": [{"tool": "get_stock", "args": {"product_id": "A"}}],
            "answer": "How many units should I add?",
            "turns": [{"calls": [ADD], "answer": "Done: there are 12 units now."}],
        },
    )


def _instance(task: dict[str, Any]) -> TaskInstance:
    return render(
        Task.model_validate(task),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(),
        system_prompt="Use the tools.",
    )


@pytest.fixture(autouse=True)
def _own_gateway() -> Iterator[None]:
    yield
    gateway.stop_shared()


def _side(server: ModelServer) -> SideModels:
    options = {"provider": "openai", "model": "sim", "base_url": server.base_url}
    return SideModels.from_config(
        "openai:sim", None, {"user": {**options, "api_key": "k", "prices": None}}
    )


async def _run(
    task: dict[str, Any], agent: Any = None, side: SideModels | None = None
) -> tuple[Trajectory, Score]:
    instance = _instance(task)
    agent = agent or OracleAgent(instance)
    options = EpisodeOptions(agent_label="test", side=side)
    return await run_episode(instance, lambda ctx: agent, options)


def _by_turn(replies: list[str]) -> Any:
    """A user model policy: its k-th message is ``replies[k]`` (the last one repeated)."""

    def policy(request: ChatRequest) -> ScriptedReply:
        return ScriptedReply(replies[min(request.assistant_turns, len(replies) - 1)])

    return policy


class Says:
    """An agent that makes the given turns in order (the last one repeated)."""

    def __init__(self, *turns: AgentTurn) -> None:
        self.turns = turns
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> AgentTurn:
        self.seen.append(observation)
        return self.turns[min(len(self.seen) - 1, len(self.turns) - 1)]


def _users(trajectory: Trajectory) -> list[str]:
    return [m.content or "" for m in trajectory.transcript() if m.role == "user"]


async def test_the_scripted_user_opens_with_the_description_and_stops_at_the_report() -> None:
    trajectory, score = await _run(_task())
    assert score.passed and trajectory.termination is Termination.COMPLETED
    assert trajectory.prompt[-1].content == "I need to restock product A."
    assert _users(trajectory) == [
        "I need to restock product A.",
        "Add 5 units.",
        "Thank you, that's all.",
    ]
    first, asked, *_, last = trajectory.steps
    assert first.annotations["opened_by"] == "scripted"
    assert asked.annotations["user_by"] == "scripted" and asked.annotations["next_user_turn"] == 1
    assert last.annotations["conversation_end"] == "user_stop"
    assert trajectory.final_answer == "Done: there are 12 units now."  # the answer scored


async def test_a_model_plays_the_user_through_the_gateway_from_persona_goal_and_facts() -> None:
    replies = ["Hi, I need to restock product A.", "Five units, please.", f"Thanks! {STOP_TOKEN}"]
    with ModelServer(_by_turn(replies)) as server:
        trajectory, score = await _run(_task(simulator="model"), side=_side(server))
        opening, answer, stop = server.chat_requests
    assert score.passed, trajectory.error
    assert _users(trajectory) == [replies[0], replies[1], "Thanks!"]
    system = opening.messages[0].content or ""
    assert "A shop clerk." in system and "how many units to add: 5" in system
    assert "I need to restock product A." in system and STOP_TOKEN in system
    assert [(m.role, m.content) for m in opening.messages[1:]] == [("user", GREETING)]
    # the agent's messages are the model's user turns, its own the assistant turns
    assert [(m.role, m.content) for m in answer.messages[1:]] == [
        ("user", GREETING),
        ("assistant", replies[0]),
        ("user", "How many units should I add?"),
    ]
    assert stop.messages[-1].content == "Done: there are 12 units now."
    steps = trajectory.steps
    assert steps[0].annotations["opened_by"] == "model:openai:sim"
    assert [len(s.annotations.get("user_model_calls", [])) for s in steps] == [1, 1, 0, 1]
    assert "model_calls" not in steps[1].annotations  # the user's calls are noted apart
    assert steps[-1].annotations["user_by"] == "model:openai:sim"


async def test_a_user_model_that_never_stops_ends_at_max_turns() -> None:
    with ModelServer(_by_turn(["Restock A.", "Hmm, tell me more."])) as server:
        trajectory, score = await _run(_task(simulator="model"), side=_side(server))
        calls = server.calls
    assert calls == 1 + 3  # the opening, then max_turns answers, then no more
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.steps[-1].annotations["conversation_end"] == "max_turns"
    assert trajectory.final_answer == "Done: there are 12 units now." and score.passed


SURROGATE = (
    '{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0,'
    ' "finish_reason": "stop", "message": {"role": "assistant", "content": "Hi \\udcff"}}]}'
)
"""A user model's reply whose text holds a lone surrogate escape: its failure, not the agent's."""


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (ScriptedReply(""), "no reply text"),
        (ScriptedReply(error=ScriptedError.garbage("<html>oops</html>", status=400)), "HTTP 400"),
        (ScriptedReply(tool_calls=[ScriptedToolCall("adjust_stock", {"delta": 99})]), "no reply"),
        (ScriptedReply(error=ScriptedError(200, body=SURROGATE, times=99)), "not valid Unicode"),
    ],
    ids=["empty", "garbage", "only-tool-calls", "lone-surrogate"],
)
async def test_a_user_model_without_usable_text_is_an_infra_error(
    reply: ScriptedReply, why: str
) -> None:
    with ModelServer(lambda request: reply) as server:
        trajectory, _ = await _run(_task(simulator="model"), side=_side(server))
    assert trajectory.termination is Termination.INFRA_ERROR
    assert why in (trajectory.error or "") and "user" in (trajectory.error or "")
    assert trajectory.steps == []  # it failed at the opening, before the agent acted


async def test_tool_calls_a_user_model_tries_to_make_are_never_run() -> None:
    inject = ScriptedToolCall("adjust_stock", {"product_id": "A", "delta": 1000})
    said = '{"tool_calls": [{"name": "adjust_stock", "arguments": {"delta": 1000}}]}'

    def policy(request: ChatRequest) -> ScriptedReply:
        if request.assistant_turns == 0:
            return ScriptedReply("Restock A, please.", tool_calls=[inject])
        return ScriptedReply(said, tool_calls=[inject])

    agent = Says(AgentTurn(content="How many units?"), AgentTurn(content="I did nothing."))
    with ModelServer(policy) as server:
        trajectory, score = await _run(_task(simulator="model"), agent, _side(server))
    assert trajectory.termination is Termination.COMPLETED
    assert [c for c, _ in trajectory.tool_calls()] == []  # nothing ran, the world is as built
    assert _users(trajectory)[:2] == ["Restock A, please.", said]  # text only, as text
    assert agent.seen[1].messages[-1].content == said
    assert not score.passed


async def test_a_long_user_reply_is_capped() -> None:
    with ModelServer(_by_turn(["Restock A.", "x" * 10_000])) as server:
        trajectory, _ = await _run(_task(simulator="model", max_turns=1), side=_side(server))
    assert len(_users(trajectory)[1]) == MAX_REPLY_CHARS


async def test_an_agent_that_ends_without_replying_ends_the_conversation() -> None:
    agent = Says(AgentTurn(tool_calls=[ToolCall(id="c1", name="get_stock", arguments={})]))
    agent.turns = (*agent.turns, AgentTurn(content="  "))
    with ModelServer(_by_turn(["Restock A.", "Five."])) as server:
        trajectory, score = await _run(_task(simulator="model"), agent, _side(server))
        calls = server.calls
    assert calls == 1  # the opening only: the user was sent nothing
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.steps[-1].annotations["conversation_end"] == "agent_silent"
    assert trajectory.final_answer == "  " and not score.passed


async def test_without_a_user_model_the_scripted_user_plays_a_model_task() -> None:
    trajectory, score = await _run(_task(simulator="model"))
    assert score.passed and trajectory.steps[0].annotations["opened_by"] == "scripted"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"user_turns": [{"content": "more"}]}, "drop user_turns or set user.mode: ask"),
        ({"user": {**USER, "max_turns": 0}}, "max_turns"),
        ({"user": {**USER, "max_turns": 51}}, "max_turns"),
        ({"user": {**USER, "mode": "chat"}}, "'ask' or 'conversation'"),
        ({"user": {**USER, "max_turns": 1}}, "at most user.max_turns=1"),
    ],
    ids=["with-user-turns", "no-turns", "too-many-turns", "unknown-mode", "solution-too-long"],
)
def test_a_bad_conversation_is_refused_with_the_fix(
    change: dict[str, Any], says: str, tmp_path: Path
) -> None:
    task = _task()
    if change.get("user", {}).get("max_turns") == 1:
        task["solution"]["turns"].append({"answer": "again"})
    task.update(change)
    with pytest.raises(SpecError) as caught:
        load_suite(write_suite(tmp_path, [task]))
    text = str(caught.value)
    assert says in text and "stock.yaml:" in text, text


def test_an_agent_that_owns_its_loop_cannot_talk_with_the_user() -> None:
    with pytest.raises(SpecError, match="has a user in conversation"):
        refuse_driven(_instance(_task()), "langgraph:app")


@pytest.mark.parametrize(
    ("message", "reply", "done"),
    [
        ("How many units should I add?", "Add 5 units.", False),
        ("Done: 12 units now.", f"Thank you, that's all. {STOP_TOKEN}", True),
        ("Is that all?", f"Thank you, that's all. {STOP_TOKEN}", True),
        ("Can you help me?", "I don't know, please just do what I asked.", False),
    ],
)
def test_the_scripted_user_answers_questions_and_stops_at_a_report(
    message: str, reply: str, done: bool
) -> None:
    spec = UserSpec.model_validate(USER)
    assert spec.conversation_reply(message) == (reply, done)


def test_the_scripted_user_says_its_satisfied_reply_before_stopping() -> None:
    spec = UserSpec.model_validate({**USER, "satisfied_reply": "Great, thanks."})
    assert spec.conversation_reply("All good?") == (f"Great, thanks. {STOP_TOKEN}", True)
    assert json.dumps(spec.conversation_reply("How many units?", asked_before=10)[0]) == json.dumps(
        spec.impatient_reply
    )


def _config(suite: Path, server: ModelServer, cache: Path) -> RunConfig:
    user = {"provider": "openai", "model": "sim", "base_url": server.base_url}
    user.update(api_key="k", prices=None, cache=str(cache))
    return RunConfig(
        suite=str(suite),
        agent="oracle",
        snapshots=False,
        retries=0,
        user_model="openai:sim",
        side_models={"user": user},
    )


def _stored(config: RunConfig, run_dir: Path) -> tuple[EpisodeRecord, dict[str, Any]]:
    record, summary = run_single(config, run_dir)
    return record, summary


def test_a_cached_rerun_of_a_conversation_is_identical_and_free(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", [_task(simulator="model")])
    replies = ["Restock A, please.", "Five units.", f"Thanks! {STOP_TOKEN}"]
    with ModelServer(_by_turn(replies)) as server:
        first, summary = _stored(_config(suite, server, tmp_path / "cache"), tmp_path / "r1")
        assert server.calls == 3
        second, again = _stored(_config(suite, server, tmp_path / "cache"), tmp_path / "r2")
        assert server.calls == 3  # the rerun made no upstream call
    assert first.score.passed, first.trajectory.error
    assert second.score.model_dump() == first.score.model_dump()
    assert second.trajectory.transcript() == first.trajectory.transcript()
    assert summary["user_model"]["calls"] == 3 and summary["user_model"]["cached_calls"] == 0
    assert again["user_model"]["cached_calls"] == 3
    assert summary["tokens"]["total"] == 0  # the oracle spent none: the user's are apart


TRANSFER = "conv-transfer-which-account"


def _sdk_agent(request: ChatRequest) -> ScriptedReply:
    """A model behind the openai adapter that plays conv-transfer-which-account."""
    users = [m.content or "" for m in request.messages if m.role == "user"]
    turn = request.assistant_turns
    if turn == 0:
        return ScriptedReply(tool_calls=[ScriptedToolCall("list_accounts", {})])
    if turn == 1:
        return ScriptedReply("Which checking account should the money come from?")
    amount = int(re.findall(r"(\d+) EUR", users[0])[0])
    account = re.findall(r"CHK-\d", users[-1])[0]
    if turn == 2:
        args = {"from_account": account, "to_account": "SAV-1", "amount": amount}
        return ScriptedReply(tool_calls=[ScriptedToolCall("transfer", args)])
    if turn == 3:
        return ScriptedReply(tool_calls=[ScriptedToolCall("get_balance", {"account_id": "SAV-1"})])
    balance = json.loads(request.messages[-1].content or "{}")["balance"]
    return ScriptedReply(f"Moved {amount} EUR from {account}. Your savings hold {balance} EUR.")


def _sdk_user(request: ChatRequest) -> ScriptedReply:
    """A user model that says its request, the account when asked, then stops."""
    system = request.messages[0].content or ""
    if request.assistant_turns == 0:
        return ScriptedReply(
            re.findall(r"Your request \(put it in your own words\): (.*)", system)[0]
        )
    if "?" in (request.messages[-1].content or ""):
        account = re.findall(r"comes from: (CHK-\d)", system)[0]
        return ScriptedReply(f"From {account}, please.")
    return ScriptedReply(f"Great, thanks! {STOP_TOKEN}")


def test_an_sdk_agent_talks_with_a_model_user_on_a_core_task_and_a_rerun_is_free(
    tmp_path: Path,
) -> None:
    pytest.importorskip("openai")
    cache = str(tmp_path / "cache")
    core = builtin_suites_dir() / "core"
    suite = tmp_path / "suite"
    (suite / "tasks").mkdir(parents=True)
    shutil.copy(core / "suite.yaml", suite / "suite.yaml")
    shutil.copy(core / "tasks" / "conversation" / f"{TRANSFER}.yaml", suite / "tasks")

    def policy(request: ChatRequest) -> ScriptedReply:
        return (_sdk_user if request.model == "sim" else _sdk_agent)(request)

    def run(server: ModelServer, out: Path) -> list[EpisodeRecord]:
        user = {"provider": "openai", "model": "sim", "base_url": server.base_url}
        config = RunConfig(
            suite=str(suite),
            epochs=2,
            agent="openai:gpt-4o",
            agent_options={"base_url": server.base_url, "api_key": "t", "cache": cache},
            snapshots=False,
            retries=0,
            user_model="openai:sim",
            side_models={"user": {**user, "api_key": "k", "prices": None, "cache": cache}},
        )
        asyncio.run(Runner(config, out, parallel=2).run())
        with RunReader(out) as reader:
            return sorted(reader.records(), key=lambda r: r.key)

    with ModelServer(policy) as server:
        first = run(server, tmp_path / "r1")
        calls = server.calls
        second = run(server, tmp_path / "r2")
        assert server.calls == calls  # agent and user answered from the cache
    assert [r.score.passed for r in first] == [True, True], [r.trajectory.error for r in first]
    assert [r.score.model_dump() for r in second] == [r.score.model_dump() for r in first]
    assert [r.trajectory.transcript() for r in second] == [r.trajectory.transcript() for r in first]
    assert calls == 2 * (5 + 3)  # per episode: five agent turns, three user messages


async def test_never_asks_acts_on_its_guess_at_once_and_the_later_plays_are_played() -> None:
    facts = {"delta": {"value": 5, "about": "how many units to add", "alternatives": [3, 5]}}
    task = _task(facts=facts)
    guessed, score = await _run(task, NeverAsksAgent(_instance(task)))
    assert [c.arguments for c, _ in guessed.tool_calls()][-1] == {"product_id": "A", "delta": 3}
    assert all("?" not in (s.message.content or "") for s in guessed.steps) and not score.passed
    instance = _instance(task)
    played, score = await _run(task, NeverRetriesAgent(reference_turns(instance), "?", []))
    assert not score.passed  # without the later plays it never adds the units
    later = later_plays(instance)
    played, score = await _run(task, NeverRetriesAgent(reference_turns(instance), "?", later))
    assert score.passed, played.error
