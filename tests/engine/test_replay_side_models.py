"""``toolproof replay`` of episodes with a model-played user and a judge model: both are
rebuilt from the calls the episode recorded, with no live call, and the same play gets
the same score; a replay that asks something new is an infra error that says why."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from toolproof import gateway
from toolproof.engine import RunConfig, Runner, replay_step
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec.user import STOP_TOKEN
from toolproof.testing import ChatRequest, ModelServer, ScriptedReply
from toolproof.trajectory import Termination
from toolproof_helpers import make_task, write_suite

JUDGE = {
    "kind": "judge",
    "name": "polite",
    "model": "openai:the-tasks-judge",
    "base_url": "http://127.0.0.1:9/v1",  # never used: the run's judge wins
    "rubric": "The reply is polite.",
    "samples": 2,
    "input": "transcript",
}
USER = {
    "simulator": "model",
    "persona": "A shop clerk.",
    "facts": {"delta": {"value": 5, "about": "how many units to add"}},
    "topics": [{"keywords": ["how many", "units"], "reply": "Add 5 units.", "reveals": ["delta"]}],
}
ADD = {"tool": "adjust_stock", "args": {"product_id": "A", "delta": 5}}
CHECKS = [{"kind": "state", "records": {"products.A.stock": 12}}, JUDGE]

ASKED = make_task(
    id="asked",
    type="multi_step",
    description="Restock product A.",
    tools=["get_stock", "adjust_stock", "ask_user"],
    user=USER,
    success=CHECKS,
    solution={
        "calls": [
            {"tool": "ask_user", "args": {"question": "How many units should I add?"}},
            {"tool": "get_stock", "args": {"product_id": "A"}},
            ADD,
        ],
        "answer": "Done: there are 12 units now.",
    },
)
TALKED = make_task(
    id="talked",
    type="multi_step",
    description="Restock product A.",
    user={**USER, "mode": "conversation", "max_turns": 3},
    success=CHECKS,
    solution={
        "calls": [{"tool": "get_stock", "args": {"product_id": "A"}}],
        "answer": "How many units should I add?",
        "turns": [{"calls": [ADD], "answer": "Done: there are 12 units now."}],
    },
)
USER_SAYS = ["Hi, product A needs restocking.", "Five units, please.", f"Thanks! {STOP_TOKEN}"]


def _policy(request: ChatRequest) -> ScriptedReply:
    if request.model == "judge":
        return ScriptedReply('{"score": 5, "reason": "Polite enough."}', usage=(90, 9))
    if (
        request.messages[0].content
        and "role-playing a person talking" in request.messages[0].content
    ):
        return ScriptedReply(USER_SAYS[min(request.assistant_turns, len(USER_SAYS) - 1)])
    return ScriptedReply("Five units, please.")  # ask_user's user


@pytest.fixture(autouse=True)
def _own_gateway() -> Iterator[None]:
    yield
    gateway.stop_shared()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of both tasks with a user model and a judge model; the server is gone after."""
    root = tmp_path_factory.mktemp("replay-side")
    suite = write_suite(root / "suite", [ASKED, TALKED])
    with ModelServer(_policy) as server:
        side = {}
        for role, model in (("user", "sim"), ("judge", "judge")):
            side[role] = {"provider": "openai", "model": model, "base_url": server.base_url}
            side[role].update(api_key="k", prices=None)
        config = RunConfig(
            suite=str(suite),
            agent="oracle",
            retries=0,
            user_model="openai:sim",
            judge_model="openai:judge",
            side_models=side,
        )
        try:
            asyncio.run(Runner(config, root / "run", parallel=1).run())
        finally:
            gateway.stop_shared()
        calls = server.calls
    with RunReader(root / "run") as reader:
        records = {r.trajectory.task_id: r for r in reader.records()}
    return {"run": root / "run", "records": records, "calls": calls, "root": root}


def _verdict(record: EpisodeRecord) -> list[tuple[str, bool, float]]:
    return [(c.name, c.passed, c.score) for c in record.score.checks]


def _replay(recorded: dict[str, Any], task: str, step: int, agent: str = "oracle") -> Any:
    out = recorded["root"] / f"replay-{task}-{step}-{agent}"
    return asyncio.run(replay_step(recorded["run"], task, step, agent, out))


def test_the_original_run_used_both_side_models(recorded: dict[str, Any]) -> None:
    asked, talked = recorded["records"]["asked"], recorded["records"]["talked"]
    assert asked.score.passed and talked.score.passed, (
        asked.trajectory.error,
        talked.trajectory.error,
    )
    assert recorded["calls"] == (1 + 2) + (3 + 2)  # user and judge calls of both episodes
    judged = next(c for c in talked.score.checks if c.name == "polite").data["prompt"][-1]
    assert "user: Five units, please." in judged["content"]  # the judge sees the user's side


@pytest.mark.parametrize(
    ("task", "step", "asks"), [("asked", 0, 1), ("asked", 1, 0), ("talked", 0, 2), ("talked", 2, 1)]
)
def test_a_replay_rebuilds_the_user_and_the_judge_from_the_record(
    recorded: dict[str, Any], task: str, step: int, asks: int
) -> None:
    original: EpisodeRecord = recorded["records"][task]
    again = _replay(recorded, task, step)  # the model server is stopped: no live call works
    assert again.trajectory.termination is Termination.COMPLETED, again.trajectory.error
    assert _verdict(again) == _verdict(original) and again.score.level == original.score.level
    assert again.trajectory.transcript() == original.trajectory.transcript()
    new_steps = again.trajectory.steps[step:]
    user_calls = [c for s in new_steps for c in s.annotations.get("user_model_calls", [])]
    judge_calls = next(c for c in again.score.checks if c.name == "polite").data["model_calls"]
    assert len(user_calls) == asks and all(c["cached"] for c in user_calls)
    assert len(judge_calls) == 2 and all(c["cached"] for c in judge_calls)


def test_a_replay_that_asks_the_user_something_new_is_refused_as_an_infra_error(
    recorded: dict[str, Any],
) -> None:
    again = _replay(recorded, "talked", 0, agent="never-asks")  # it reports without asking
    assert again.trajectory.termination is Termination.INFRA_ERROR
    assert "replay: the user model was asked something" in (again.trajectory.error or "")
