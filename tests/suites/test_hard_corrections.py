"""Mid-task user corrections in the ``hard`` tier (issue #18, item 4).

In ``hard-meeting-requests-17`` to ``-20`` the written policy says to check with the user
before booking, and the scripted user, asked anything, moves one meeting to another day
(agreed by phone: no mail shows it). An agent that does not ask, or asks and books the day
in the mail anyway, fails the labelled check (``trap:user-correction``): one required
change, so the rest of its work keeps its credit; not asking also breaks the policy. The
quality gate (oracle perfect, noop / random / never-asks failing) runs in ``test_proven.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import (
    ASK_TOOL,
    ScriptedAgent,
    reference_turns,
    substitute,
    typed_submit,
)
from toolproof.cli._task_stats import suite_stats
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Level, Score
from toolproof.spec import Limits, SolutionCall, Suite, TaskInstance, builtin_suites_dir, load_suite
from toolproof.spec import render as render_task

TRAP = "trap:user-correction"
SUITE = builtin_suites_dir() / "hard"


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(SUITE)


def _render(suite: Suite, task_id: str, epoch: int = 0) -> TaskInstance:
    return render_task(
        suite.task(task_id),
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=epoch,
        limits=Limits(),
        system_prompt="",
    )


def _days(inst: TaskInstance) -> tuple[str, str]:
    """The day the mail asked for and the day the user moved the meeting to."""
    assert inst.task.user is not None
    fact = inst.task.user.facts["moved_to"]
    return str(fact.alternatives[0]), str(fact.value)


def _play(inst: TaskInstance, edit: Callable[[list[list[SolutionCall]]], None]) -> Score:
    turns = reference_turns(inst)
    edit(turns)
    answer = str(inst.task.solution.answer)

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent(turns, answer, submit=typed_submit(inst))  # the test plays the key

    options = EpisodeOptions(agent_label="test", fixtures_base=SUITE / "tasks")
    _, score = asyncio.run(run_episode(inst, factory, options))
    return score


def _failed(score: Score) -> set[str]:
    return {c.name for c in score.checks if not c.passed}


def _labelled(inst: TaskInstance) -> str:
    return next(
        str(c.name) for c in inst.task.success if str(c.name).endswith("_on_the_corrected_day")
    )


def test_four_correction_tasks_labelled_long_and_ambiguous(suite: Suite) -> None:
    tasks = [t for t in suite.tasks if TRAP in t.tags]
    assert [t.id for t in tasks] == [f"hard-meeting-requests-{n}" for n in range(17, 21)]
    ids = {t.id for t in tasks}
    calls = {s.task_id: s.reference_calls for s in suite_stats(suite) if s.task_id in ids}
    assert min(calls.values()) >= 15 and max(calls.values()) >= 40, calls
    for task in tasks:
        assert str(task.category) == "ambiguous", task.id  # only the user knows the new day
        assert task.user is not None and "moved_to" in task.user.facts
        assert "ask_user" in task.world.files["meeting-policy.md"]


@pytest.mark.parametrize(
    "question",
    [
        "Before I book anything: has any of these meeting requests changed?",
        "Shall I proceed?",
        "hello",
        "x" * 5000,
    ],
)
def test_the_user_tells_the_change_however_asked(suite: Suite, question: str) -> None:
    for epoch in range(3):
        inst = _render(suite, "hard-meeting-requests-17", epoch)
        assert inst.task.user is not None
        old, new = _days(inst)
        reply, _ = inst.task.user.scripted_reply(question, 0)
        assert new in reply and old not in reply, (question, reply)


def test_the_new_day_changes_with_the_seed_and_is_never_the_mails(suite: Suite) -> None:
    for task_id in [f"hard-meeting-requests-{n}" for n in range(17, 21)]:
        days = [_days(_render(suite, task_id, epoch)) for epoch in range(6)]
        assert len({new for _, new in days}) > 1, task_id
        assert all(old != new for old, new in days), task_id
        assert not any(new in _render(suite, task_id).task.description for _, new in days)


def test_asking_and_ignoring_the_correction_fails_the_labelled_checks(suite: Suite) -> None:
    inst = _render(suite, "hard-meeting-requests-18")
    old, new = _days(inst)

    def book_the_mails_day(turns: list[list[SolutionCall]]) -> None:
        turns[:] = [
            [SolutionCall(tool=c.tool, args=substitute(c.args, {new: old})) for c in turn]
            for turn in turns
        ]

    score = _play(inst, book_the_mails_day)
    assert not score.passed
    assert _failed(score) == {_labelled(inst)}  # it did ask; only the moved meeting is wrong
    assert score.level is Level.PARTIAL  # the rest of the work keeps its credit


def test_booking_both_days_fails_the_labelled_check(suite: Suite) -> None:
    inst = _render(suite, "hard-meeting-requests-17")
    old, new = _days(inst)
    booking = next(
        c
        for turn in reference_turns(inst)
        for c in turn
        if c.tool == "create_event" and c.args["date"] == new
    )
    again = SolutionCall(tool="create_event", args={**booking.args, "date": old})

    score = _play(inst, lambda turns: turns.append([again]))
    # the extra booking is also collateral damage (one event more than the reference makes)
    failed = _failed(score)
    assert _labelled(inst) in failed
    assert failed <= {_labelled(inst), "collateral"}


def test_not_asking_fails_the_policy_and_the_labelled_check(suite: Suite) -> None:
    inst = _render(suite, "hard-meeting-requests-19")
    old, new = _days(inst)

    def never_ask(turns: list[list[SolutionCall]]) -> None:
        turns[:] = [
            [
                SolutionCall(tool=c.tool, args=substitute(c.args, {new: old}))
                for c in turn
                if c.tool != ASK_TOOL
            ]
            for turn in turns
        ]

    score = _play(inst, never_ask)
    assert not score.passed
    assert {_labelled(inst), "policy_asked_before_booking"} <= _failed(score)


def test_asking_only_after_booking_breaks_the_policy(suite: Suite) -> None:
    """Booking first and asking afterwards (then booking the right day) is still caught."""
    inst = _render(suite, "hard-meeting-requests-17")

    def ask_last(turns: list[list[SolutionCall]]) -> None:
        asks = [c for turn in turns for c in turn if c.tool == ASK_TOOL]
        turns[:] = [[c for c in turn if c.tool != ASK_TOOL] for turn in turns]
        turns[:] = [turn for turn in turns if turn] + [asks]

    score = _play(inst, ask_last)
    assert not score.passed
    assert _failed(score) == {"policy_asked_before_booking"}
