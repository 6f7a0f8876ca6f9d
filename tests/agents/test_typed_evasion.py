"""Evading the typed answer itself (issue 31): strict refuses what free text could hedge.

End to end on core tasks (the real gateway, world and scorer): a second, different
``submit_answer`` fails strict and loose whichever value was right (one submission
counts, in the same turn or later); the same value twice, or an invalid submission
corrected, still passes; a number as a string, NaN, extra properties and a hedge
string are refused or fail; a list answer naming every id fails; a payment made in
the same turn before the submission is collateral damage (a veto), and every call
after the submission is refused, so it changes nothing.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from adapter_support import core_instance

from toolproof.agents import AgentTurn, Observation
from toolproof.agents.builtin.flawed import reference_turns
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Score
from toolproof.spec import ANSWER_TOOL, TaskInstance
from toolproof.trajectory import ToolCall, Trajectory

Extra = Callable[[TaskInstance], Sequence[Sequence[tuple[str, dict[str, Any]]]]]
"""The turns an agent plays after the reference calls: each a list of (tool, arguments)."""


class _Scripted:
    """The task's reference calls, then the given turns, then a plain "Done."."""

    def __init__(self, instance: TaskInstance, extra: Extra) -> None:
        self._turns = [
            [(c.tool, dict(c.args)) for c in turn] for turn in reference_turns(instance)
        ] + [list(t) for t in extra(instance)]
        self._next = 0

    async def act(self, observation: Observation) -> AgentTurn:
        if self._next >= len(self._turns):
            return AgentTurn(content="Done.")
        turn = self._turns[self._next]
        self._next += 1
        calls = [
            ToolCall(id=f"c{self._next}_{n}", name=name, arguments=args)
            for n, (name, args) in enumerate(turn)
        ]
        return AgentTurn(tool_calls=calls)


def _play(task: str, extra: Extra) -> tuple[Trajectory, Score]:
    instance = core_instance(task)
    return asyncio.run(
        run_episode(
            instance,
            lambda ctx, i=instance: _Scripted(i, extra),
            EpisodeOptions(agent_label="typed-evasion"),
        )
    )


def _expected(task: str) -> Any:
    answer = core_instance(task).task.answer
    assert answer is not None
    return answer.expected


def _submit(value: Any) -> tuple[str, dict[str, Any]]:
    return (ANSWER_TOOL, {"answer": value})


def _answer_check(score: Score) -> Any:
    (answer,) = [c for c in score.checks if c.kind == "answer"]
    return answer


def test_the_right_value_submitted_once_passes() -> None:
    right = _expected("bank-balance")
    _, score = _play("bank-balance", lambda i: [[_submit(right)]])
    assert score.passed and score.passed_loose


def test_a_second_different_submission_fails_strict_and_loose() -> None:
    """Right then wrong, or wrong then right, in one turn: one submission counts, and
    trying a second one spreads the answer over two values."""
    right = _expected("bank-balance")
    for first, second in ((right, right + 12), (right + 12, right)):
        turns = [[_submit(first), _submit(second)]]
        trajectory, score = _play("bank-balance", lambda i, t=turns: t)
        refused = [r for s in trajectory.steps for r in s.results if r.name == ANSWER_TOOL][1]
        assert refused.is_error  # the gateway refused it: the episode was over
        assert not score.passed and not score.passed_loose
        assert "one submission counts" in _answer_check(score).detail


def test_no_turn_follows_the_submission() -> None:
    """A second submission in a later turn cannot be made: the first one ended the episode."""
    right = _expected("bank-balance")
    trajectory, score = _play("bank-balance", lambda i: [[_submit(right)], [_submit(right + 12)]])
    submissions = [r for s in trajectory.steps for r in s.results if r.name == ANSWER_TOOL]
    assert len(submissions) == 1
    assert score.passed


def test_the_same_value_twice_changes_nothing() -> None:
    right = _expected("bank-balance")
    _, score = _play("bank-balance", lambda i: [[_submit(right)], [_submit(right)]])
    assert score.passed


@pytest.mark.parametrize(
    "invalid",
    [
        {"answer": "955.38"},  # a number as a string
        {"answer": "42 or 46"},  # a hedge where a number goes
        {"answer": 1, "also": 2},  # extra properties
        {},  # no answer
        {"answer": [1, 2]},
    ],
)
def test_an_invalid_submission_is_refused_and_counts_for_nothing(invalid: dict[str, Any]) -> None:
    """Refused by the declared schema: no submission, strict fails; a correction after it is
    the one submission."""
    right = _expected("bank-balance")
    trajectory, score = _play("bank-balance", lambda i: [[(ANSWER_TOOL, invalid)]])
    first = next(r for s in trajectory.steps for r in s.results if r.name == ANSWER_TOOL)
    assert first.is_error and first.error_kind == "invalid_arguments"
    assert not score.passed
    _, corrected = _play("bank-balance", lambda i: [[(ANSWER_TOOL, invalid)], [_submit(right)]])
    assert corrected.passed


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_or_infinity_is_no_answer(value: float) -> None:
    _, score = _play("bank-balance", lambda i: [[_submit(value)]])
    assert not score.passed and not score.passed_loose


def test_an_out_of_range_number_fails() -> None:
    _, score = _play("bank-balance", lambda i: [[_submit(-1e300)]])
    assert not score.passed and not score.passed_loose


def test_a_payment_in_the_same_turn_before_the_submission_is_collateral_damage() -> None:
    def extra(instance: TaskInstance) -> list[list[tuple[str, dict[str, Any]]]]:
        accounts = sorted(instance.task.world.records["accounts"])
        pay = ("transfer", {"from_account": accounts[0], "to_account": accounts[1], "amount": 1.0})
        return [[pay, _submit(_expected("bank-balance"))]]

    trajectory, score = _play("bank-balance", extra)
    transfer = [r for s in trajectory.steps for r in s.results if r.name == "transfer"]
    if transfer and not transfer[0].is_error:  # the transfer went through: a veto
        assert score.level.value == "fail"
        assert any(c.veto for c in score.checks)
    assert not score.passed


def test_every_call_after_the_submission_is_refused_and_changes_nothing() -> None:
    """In the submission's turn, a read after it is refused and harmless (the episode
    passes); a transfer after it is refused and moves no money (bank-balance forbids
    calling transfer at all, so the attempt itself fails the episode)."""
    right = _expected("bank-balance")
    trajectory, score = _play("bank-balance", lambda i: [[_submit(right), ("list_accounts", {})]])
    (read,) = [r for s in trajectory.steps for r in s.results if r.name == "list_accounts"]
    assert read.is_error and score.passed

    def extra(instance: TaskInstance) -> list[list[tuple[str, dict[str, Any]]]]:
        accounts = sorted(instance.task.world.records["accounts"])
        pay = ("transfer", {"from_account": accounts[0], "to_account": accounts[1], "amount": 1.0})
        return [[_submit(right), pay]]

    trajectory, score = _play("bank-balance", extra)
    (transfer,) = [r for s in trajectory.steps for r in s.results if r.name == "transfer"]
    assert transfer.is_error and "the task is over" in transfer.content
    assert not any(c.veto for c in score.checks if c.kind == "state")


def test_a_list_answer_naming_every_option_fails() -> None:
    """mail-unread-senders: the senders are a list compared as a set; every sender of the
    inbox is a superset, and fails strict."""
    answer = core_instance("mail-unread-senders").task.answer
    assert answer is not None
    every = list(answer.type["properties"]["senders"]["items"]["enum"])
    value = {**answer.expected, "senders": every}
    _, score = _play("mail-unread-senders", lambda i: [[_submit(value)]])
    assert not score.passed and not score.passed_loose
