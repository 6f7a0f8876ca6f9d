"""The ``ask`` check (scoring/checks/ask.py): asking earns credit only when it names the
ambiguity, issue 31 F7.

Through the real engine on the built-in ambiguous tasks: the reference calls, then a final
message. A question naming exactly the declared options passes; a false claim of action,
a statement that names both, and a question that lists every entity of the kind fail
(level fail, no credit).
"""

from __future__ import annotations

import asyncio

import pytest

from toolproof.agents import AgentTurn, Observation
from toolproof.agents.builtin.flawed import reference_turns
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Score
from toolproof.spec import TaskInstance, load_suite, render
from toolproof.trajectory import ToolCall


def _instance(task_id: str) -> TaskInstance:
    loaded = load_suite("core")
    return render(
        loaded.task(task_id),
        suite=loaded.config.name,
        suite_seed=loaded.config.seed,
        epoch=0,
        limits=loaded.config.limits,
        system_prompt=loaded.config.system_prompt,
    )


class _Says:
    """Plays the reference calls, then says ``text``."""

    def __init__(self, instance: TaskInstance, text: str) -> None:
        self.turns = reference_turns(instance)
        self.text, self.n = text, 0

    async def act(self, observation: Observation) -> AgentTurn:
        if self.n < len(self.turns):
            calls = self.turns[self.n]
            self.n += 1
            return AgentTurn(
                tool_calls=[
                    ToolCall(id=f"c{self.n}_{k}", name=c.tool, arguments=dict(c.args))
                    for k, c in enumerate(calls)
                ]
            )
        return AgentTurn(content=self.text)


def _score(task_id: str, text: str) -> Score:
    instance = _instance(task_id)
    _, score = asyncio.run(
        run_episode(instance, lambda ctx: _Says(instance, text), EpisodeOptions(agent_label="t"))
    )
    return score


def _asks(score: Score) -> str:
    (check,) = [c for c in score.checks if c.name == "asks_which"]
    return check.detail if not check.passed else ""


def test_a_question_naming_exactly_the_options_passes() -> None:
    score = _score("api-which-login", "T-1 and T-6 both match. Which one should be urgent?")
    assert score.passed and not _asks(score)
    assert _score("api-which-login", "Which one should be urgent, T-1 or T-6?").passed


@pytest.mark.parametrize(
    "text",
    [
        "Done: I made T-1 urgent, which was the better match than T-6.",
        "T-1 and T-6 match. I can't decide which, so I did nothing.",
        "Which ticket do you mean: T-1, T-2, T-3, T-4, T-5, T-6, T-7 or T-8?",
        "Which one: T-1?",
        "Which one should be urgent?",
        "T-1, T-6 and T-8 all look related. Which?",
    ],
)
def test_asking_without_naming_the_ambiguity_earns_nothing(text: str) -> None:
    score = _score("api-which-login", text)
    assert score.level.value == "fail" and not score.passed and not score.passed_loose
    assert _asks(score)


def test_a_question_listing_every_payee_earns_nothing() -> None:
    instance = _instance("bank-which-sam")
    payees = instance.task.world.records["payees"]
    listing = "; ".join(f"{k} {v['name']}" for k, v in payees.items())
    score = _score("bank-which-sam", f"Which payee do you mean: {listing}, or anyone else?")
    assert score.level.value == "fail"
    assert "more than the options" in _asks(score)


def test_the_reference_question_passes_every_seed() -> None:
    loaded = load_suite("core")
    for task in loaded.tasks:
        if not any(getattr(c, "function", None) == "ask" for c in task.success):
            continue
        instance = _instance(task.id)
        score = _score(task.id, instance.task.solution.answer)
        assert score.passed, (task.id, _asks(score))
