"""``acts`` / ``drives``: the engine's cheap test of what kind of agent it holds, the same
answer as ``isinstance`` against the ``Agent`` and ``DrivenAgent`` protocols."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.agents import Agent, DrivenAgent
from toolproof.agents.base import acts, drives


class Acts:
    async def act(self, observation: Any) -> Any: ...


class Runs:
    async def run(self, session: Any) -> str:
        return ""


class Both(Acts, Runs):
    pass


class NoneAct:
    act = None


class Dynamic:
    def __getattr__(self, name: str) -> Any:
        if name == "run":
            return lambda session: None
        raise AttributeError(name)


class Nothing:
    pass


def _given_act() -> object:
    agent = Nothing()
    agent.act = lambda observation: None  # type: ignore[attr-defined]
    return agent


@pytest.mark.parametrize(
    "agent", [Acts(), Runs(), Both(), NoneAct(), Dynamic(), Nothing(), _given_act(), 42]
)
def test_the_same_answer_as_the_protocols(agent: object) -> None:
    assert acts(agent) == isinstance(agent, Agent)
    assert drives(agent) == (isinstance(agent, DrivenAgent) and not isinstance(agent, Agent))
