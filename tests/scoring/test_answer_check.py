"""The ``answer`` check and the episode's strict and loose passes (scoring/checks/answer.py)."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.scoring.checks._commit import self_doubt
from toolproof.scoring.checks.answer import pasted_output
from toolproof.spec import ANSWER_TOOL
from toolproof.trajectory import Message, Step, Termination, ToolCall, ToolResult, Trajectory

from .scoring_kit import score

ANSWER = {"kind": "answer", "type": {"type": "integer"}, "expected": 7}
SOLUTION = {"calls": [{"tool": "get_stock", "args": {"product_id": "A"}}], "submit": 7}
LOOKUP = ("get_stock", {"product_id": "A"})


def _run(answer: str | None, calls: list[Any], checks: list[dict[str, Any]] | None = None) -> Any:
    return score(checks or [ANSWER], answer=answer, calls=calls, solution=SOLUTION)


def test_the_submitted_value_passes_strict_and_loose() -> None:
    result = _run(None, [LOOKUP, (ANSWER_TOOL, {"answer": 7})])
    assert result.passed and result.passed_loose
    assert result.tool_calls == 1  # the submission is not a tool call
    (answer,) = result.checks
    assert answer.data == {"submitted": 7, "strict": True, "loose": True}


def test_a_wrong_submission_fails_both_whatever_the_text_says() -> None:
    result = _run("7", [LOOKUP, (ANSWER_TOOL, {"answer": 8})])
    assert not result.passed and not result.passed_loose


def test_a_refused_submission_does_not_count() -> None:
    """A submission the gateway refused (an error result) is no submission."""
    result = _run("7", [LOOKUP, (ANSWER_TOOL, {"answer": "7 or 8"}, True)])
    assert not result.passed
    assert result.passed_loose  # the text says 7 and nothing else


def test_free_text_passes_loose_only() -> None:
    result = _run("There are 7 units.", [LOOKUP])
    assert not result.passed and result.passed_loose
    assert result.level.value == "fail"  # the answer is the only progress check


def test_loose_never_rescues_another_failing_check() -> None:
    checks = [ANSWER, {"kind": "process", "must_call": ["adjust_stock"]}]
    result = _run("There are 7 units.", [LOOKUP], checks)
    assert not result.passed and not result.passed_loose


def _with_result(content: str) -> Trajectory:
    call = ToolCall(id="c0", name="get_stock", arguments={"product_id": "A"})
    result = ToolResult(call_id="c0", name="get_stock", content=content)
    step = Step(index=0, message=Message(role="assistant", tool_calls=[call]), results=[result])
    return Trajectory(
        episode_id="t#0",
        task_id="t",
        epoch=0,
        seed=0,
        agent="test",
        prompt=[],
        steps=[step],
        termination=Termination.COMPLETED,
    )


def test_an_answer_that_pastes_a_tool_result_is_a_dump() -> None:
    """The value followed by the tool's output, even reformatted across lines, is no answer."""
    trajectory = _with_result('{"product_id": "A", "stock": 7}')
    pasted = '7\n\nEverything I saw:\n{"product_id": "A",\n  "stock": 7}'
    assert pasted_output(pasted, trajectory) == "it repeats the result of get_stock word for word"
    assert pasted_output("There are 7 units of A.", trajectory) is None
    assert pasted_output("ok 7", _with_result("ok")) is None  # short results are words


def test_failure_modes_do_not_blame_the_answer_tool() -> None:
    """A submission is not a wrong tool; an answer without a look-up is hallucinated; a
    submission the type refused and never corrected is invalid arguments."""
    guessed = _run(None, [(ANSWER_TOOL, {"answer": 8})])
    assert guessed.failure_mode == "hallucinated_answer"
    wrong = _run(None, [LOOKUP, (ANSWER_TOOL, {"answer": 8})])
    assert wrong.failure_mode == "wrong_answer"
    refused = _run("", [LOOKUP, (ANSWER_TOOL, {"answer": "7 or 8"}, True)])
    assert refused.failure_mode == "invalid_arguments"


@pytest.mark.parametrize(
    "answer",
    [
        "Maybe Ticket T-7 is closed.",
        "Ticket T-7 is closed, I think.",
        "Quizás el ticket T-7 está cerrado. No estoy seguro.",
        "Vielleicht ist T-7 geschlossen.",
        "It is not true that Ticket T-7 is closed.",
        "Ticket T-7 is closed. That is wrong, though: es falso.",
        "T-7 可能 已关闭",
    ],
)
def test_an_answer_that_doubts_or_denies_itself_commits_to_nothing(answer: str) -> None:
    assert self_doubt(answer) is not None


@pytest.mark.parametrize(
    "answer",
    [
        "Ticket T-7 is closed with urgent priority.",
        "There is no Dentist on 2026-03-05, so I cancelled nothing.",
        "You have two payees called Alex: Alex Ortiz and Alex Lee. Which one should I pay?",
        "I couldn't: CHK-1 is in EUR and USD-1 in USD. Nothing was moved.",
    ],
)
def test_a_plain_answer_is_no_doubt(answer: str) -> None:
    assert self_doubt(answer) is None


def test_one_submission_counts_a_second_different_one_fails_both() -> None:
    """The gateway refuses every call after the accepted submission; trying to hand in a
    different value spreads the answer over two, whichever was right."""
    for first, second in ((7, 8), (8, 7)):
        calls = [LOOKUP, (ANSWER_TOOL, {"answer": first}), (ANSWER_TOOL, {"answer": second}, True)]
        result = _run(None, calls)
        assert not result.passed and not result.passed_loose
        (answer,) = result.checks
        assert "one submission counts" in answer.detail


@pytest.mark.parametrize("later", [{"answer": 7}, {"answer": 7.0}])
def test_the_same_value_again_changes_nothing(later: dict[str, Any]) -> None:
    calls = [LOOKUP, (ANSWER_TOOL, {"answer": 7}), (ANSWER_TOOL, later, True)]
    assert _run(None, calls).passed


@pytest.mark.parametrize("later", [{"answer": "7 or 8"}, {}, {"answer": None}])
def test_any_other_later_submission_is_a_second_answer(later: dict[str, Any]) -> None:
    calls = [LOOKUP, (ANSWER_TOOL, {"answer": 7}), (ANSWER_TOOL, later, True)]
    assert not _run(None, calls).passed


def test_a_refused_submission_before_the_accepted_one_is_a_correction() -> None:
    calls = [LOOKUP, (ANSWER_TOOL, {"answer": "7 or 8"}, True), (ANSWER_TOOL, {"answer": 7})]
    assert _run(None, calls).passed


def test_a_hedge_written_into_a_short_string_answer_is_not_the_value() -> None:
    checks = [{"kind": "answer", "type": {"type": "string", "maxLength": 40}, "expected": "ZX-42"}]
    solution = {"calls": [{"tool": "get_stock", "args": {"product_id": "A"}}], "submit": "ZX-42"}
    for said in ("ZX-42 or ZX-43", "maybe ZX-42", "ZX-42?"):
        calls = [LOOKUP, (ANSWER_TOOL, {"answer": said})]
        result = score(checks, answer=None, calls=calls, solution=solution)
        assert not result.passed and not result.passed_loose
    calls = [LOOKUP, (ANSWER_TOOL, {"answer": "  zx-42 "})]
    assert score(checks, answer=None, calls=calls, solution=solution).passed
