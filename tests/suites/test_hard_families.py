"""The catalog-sync and expense-claims families of the ``hard`` tier (issue #18).

``catalog-sync`` (a paginated, versioned REST API with a 429, a deprecated mirror and a
deprecated tool) and ``expense-claims`` (mail + bank + files + calendar under a written
policy): their sizes are in the ranges the issue asks for, every trap is labelled, and the
shortcuts an agent is tempted by (paying every claim, writing through the deprecated tool,
repricing a retired product, guessing ids) score as the failures they are. The quality gate
itself runs in ``test_proven.py``; that the files are what ``scripts/gen_hard_suite.py``
writes from ``scripts/hard_families/`` is ``tests/scripts/test_gen_hard_suite.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import ScriptedAgent, reference_turns, typed_submit
from toolproof.cli._task_stats import suite_stats
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Level, Score
from toolproof.spec import (
    CallMatch,
    Limits,
    ProcessCheck,
    SolutionCall,
    Suite,
    Task,
    builtin_suites_dir,
    load_suite,
    render,
)

FAMILIES = {"catalog-sync": (15, 45), "expense-claims": (20, 50)}


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(builtin_suites_dir() / "hard")


def _family(suite: Suite, folder: str) -> list[Task]:
    return [t for t in suite.tasks if suite.task_file(t.id).parent.name == folder]


def test_each_family_is_long_labelled_and_split_into_required_changes(suite: Suite) -> None:
    stats = {s.task_id: s for s in suite_stats(suite)}
    for folder, (low, high) in FAMILIES.items():
        tasks = _family(suite, folder)
        assert len(tasks) >= 8, folder
        calls = sorted(stats[t.id].reference_calls for t in tasks)
        assert low <= calls[0] and calls[-1] <= high, (folder, calls)
        assert len([c for c in calls if c >= 40]) >= 2, (folder, calls)
        assert any(str(t.category) == "tool_error" for t in tasks), folder
        for task in tasks:
            assert "trap:policy-shortcut" in task.tags, task.id
            assert any(getattr(c, "unchanged_elsewhere", False) for c in task.success), task.id


def _play(suite: Suite, task_id: str, edit: Callable[[list[list[SolutionCall]]], None]) -> Score:
    """Score the oracle's turns of epoch 0 after ``edit`` changed them (in place)."""
    inst = render(
        suite.task(task_id),
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=0,
        limits=Limits(),
        system_prompt="",
    )
    turns = reference_turns(inst)
    edit(turns)
    answer = str(inst.task.solution.answer)

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent(turns, answer, submit=typed_submit(inst))  # the test plays the key

    options = EpisodeOptions(agent_label="shortcut", fixtures_base=suite.task_file(task_id).parent)
    _, score = asyncio.run(run_episode(inst, factory, options))
    return score


def _token(task: Task) -> str:
    """The token the reference solution logs in for (its first ``api_call``'s)."""
    for turn in task.solution.calls:
        for call in turn if isinstance(turn, list) else [turn]:
            if call.tool == "api_call":
                return str(call.args["token"])
    raise AssertionError(f"{task.id}: no api_call in the reference solution")


def _then(call: SolutionCall) -> Callable[[list[list[SolutionCall]]], None]:
    """An edit that makes ``call`` in a turn of its own after the reference's turns."""

    def edit(turns: list[list[SolutionCall]]) -> None:
        turns.append([call])

    return edit


def _failed(score: Score) -> set[str]:
    return {c.name for c in score.checks if not c.passed}


def test_paying_a_claim_the_policy_refuses_fails_the_policy(suite: Suite) -> None:
    task = suite.task("hard-expense-claims-01")
    guard = next(c for c in task.success if c.name == "policy_unapproved_unpaid")
    assert isinstance(guard, ProcessCheck)
    first = guard.must_not_call[0]
    assert isinstance(first, CallMatch)
    payee = first.args["payee_id"]
    pay = SolutionCall(
        tool="pay_payee",
        args={"from_account": "CHK-1", "payee_id": payee, "amount": 300.0, "memo": "claim"},
    )
    score = _play(suite, task.id, _then(pay))
    assert not score.passed
    assert {"policy_unapproved_unpaid", "balance_and_nothing_else"} <= _failed(score)


def test_deleting_mail_or_touching_the_calendar_is_collateral_damage(suite: Suite) -> None:
    for call in (
        SolutionCall(tool="delete_email", args={"email_id": "N1"}),
        SolutionCall(tool="cancel_event", args={"event_id": "E2"}),
    ):
        score = _play(suite, "hard-expense-claims-01", _then(call))
        assert not score.passed, call.tool
        assert "balance_and_nothing_else" in _failed(score), call.tool


def test_the_deprecated_tool_and_a_guessed_id_are_caught(suite: Suite) -> None:
    task = suite.task("hard-catalog-sync-01")
    products = task.world.records["api"]["products"]
    listed = {
        str(c.name).removeprefix("repriced_")
        for c in task.success
        if str(c.name).startswith("repriced_")
    }
    stranger = next(
        pid for pid, p in products.items() if p["sku"] not in listed and p["status"] == "active"
    )
    for call in (
        SolutionCall(tool="set_price_by_sku", args={"sku": sorted(listed)[0], "price": 10.0}),
        SolutionCall(
            tool="api_call",
            args={
                "token": _token(task),
                "method": "PATCH",
                "path": f"/products/{stranger}",
                "body": {"price": 1.0, "version": products[stranger]["version"]},
            },
        ),
    ):
        score = _play(suite, task.id, _then(call))
        assert not score.passed, call.tool
        assert "nothing_else_changed" in _failed(score), call.tool


def _drop_later_writes(turns: list[list[SolutionCall]]) -> None:
    """Leave out the later half of the reference's writes (the reads all stay)."""
    writes = [
        (t, c)
        for t, turn in enumerate(turns)
        for c, call in enumerate(turn)
        if call.tool != "read_email"
        and call.args.get("method", "PATCH") == "PATCH"
        and call.tool not in {"read_file", "list_emails", "list_payees", "get_balance"}
    ]
    for t, c in reversed(writes[len(writes) // 2 :]):
        del turns[t][c]
    turns[:] = [turn for turn in turns if turn]


def test_half_the_work_earns_partial_credit(suite: Suite) -> None:
    """Credit is the share of required changes: stopping halfway scores between 0 and 1."""
    for task_id in ("hard-catalog-sync-01", "hard-expense-claims-01"):
        score = _play(suite, task_id, _drop_later_writes)
        assert not score.passed, task_id
        assert 0.25 < score.fraction < 0.75, (task_id, score.fraction)


def test_calls_without_logging_in_change_nothing(suite: Suite) -> None:
    """An agent that skips api_token and sends a made-up token gets 401s and no credit."""

    def forge(turns: list[list[SolutionCall]]) -> None:
        for turn in turns:
            turn[:] = [c for c in turn if c.tool != "api_token"]
            for call in turn:
                if "token" in call.args:
                    call.args["token"] = "tk_" + "0" * 24
        turns[:] = [turn for turn in turns if turn]

    score = _play(suite, "hard-catalog-sync-01", forge)
    assert not score.passed
    assert score.level is Level.FAIL
    assert score.failure_mode == "ignored_tool_error"
    changed = {c.name for c in score.checks if c.passed and str(c.name).startswith("repriced_")}
    assert changed == set()  # (only the copied answer's count and SKUs still match)
