"""``toolproof check-task``: the quality gate names each broken rule with ``file:line`` and
exits 1; a target that does not load exits 2 with validate's messages; a good task exits 0
and says what it measures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolproof_helpers import CliResult, make_task, write_suite, write_yaml

Invoke = Callable[..., CliResult]

GOOD = make_task(
    id="stock",
    description="How many units of product A are in stock?",
    tags=["trap:distractor-tool"],
    params={"s": {"int": [20, 90]}},
    world={"records": {"products": {"A": {"name": "Bolt", "stock": "{{ s }}"}}}},
    success=[
        {"kind": "output", "name": "says_stock", "number": "{{ s }}"},
        {"kind": "process", "must_call": ["get_stock"]},
        {"kind": "state", "unchanged_elsewhere": True},
    ],
    solution={
        "calls": [{"tool": "get_stock", "args": {"product_id": "A"}}],
        "answer": "There are {{ s }} units.",
    },
)


def _suite(tmp_path: Path, **task: Any) -> Path:
    """A suite of one task: GOOD with ``task``'s fields replaced (None removes one)."""
    fields = {k: v for k, v in {**GOOD, **task}.items() if v is not None}
    return write_suite(tmp_path / "suite", [fields])


def _finding(result: CliResult, rule: str) -> str:
    assert result.code == 1, (result.out, result.err)
    assert "Traceback" not in result.out + result.err
    lines = [line for line in result.out.splitlines() if f": {rule}: " in line]
    assert lines, result.out
    return lines[0]


def test_a_good_task_passes_and_the_report_says_what_it_measures(
    invoke: Invoke, tmp_path: Path
) -> None:
    suite = _suite(tmp_path)
    result = invoke("check-task", suite / "tasks" / "stock.yaml")
    assert result.code == 0, (result.out, result.err)
    assert "ok   stock: 1 reference call(s) in 1 turn(s)" in result.out
    assert "2 tool(s) offered (1 used, 1 distractors)" in result.out
    assert "traps: distractor-tool" in result.out and "normal, difficulty 1" in result.out
    assert invoke("check-task", suite).code == 0  # the suite folder: the same verdict


def test_the_answer_in_the_prompt_is_found_with_its_line(invoke: Invoke, tmp_path: Path) -> None:
    suite = _suite(tmp_path, description="There are {{ s }} units of A. How many are in stock?")
    line = _finding(invoke("check-task", suite), "answer_in_prompt")
    assert "tasks/stock.yaml:2: answer_in_prompt: success.0 (says_stock): " in line
    assert "(epoch 0: number " in line


def test_fixed_facts_are_found(invoke: Invoke, tmp_path: Path) -> None:
    suite = _suite(
        tmp_path,
        params=None,
        world={"records": {"products": {"A": {"name": "Bolt", "stock": 7}}}},
        success=[{"kind": "output", "number": 7}, {"kind": "process", "must_call": ["get_stock"]}],
        solution={"calls": [{"tool": "get_stock", "args": {"product_id": "A"}}], "answer": "7"},
    )
    assert "same on all 5 seeds" in _finding(invoke("check-task", suite), "facts_vary")
    waived = _suite(
        tmp_path,
        params=None,
        tags=["fixed-facts"],
        world={"records": {"products": {"A": {"name": "Bolt", "stock": 7}}}},
        success=[{"kind": "output", "number": 7}, {"kind": "process", "must_call": ["get_stock"]}],
        solution={"calls": [{"tool": "get_stock", "args": {"product_id": "A"}}], "answer": "7"},
    )
    assert invoke("check-task", waived).code == 0


def test_a_wrong_solution_and_a_guessable_answer_are_found(invoke: Invoke, tmp_path: Path) -> None:
    wrong = _suite(tmp_path, solution={"calls": [], "answer": "I do not know."})
    assert "not perfect" in _finding(invoke("check-task", wrong), "oracle")
    # an answer the random agent says by chance, on every seed (any word at all)
    guessable = _suite(
        tmp_path,
        params={"s": {"int": [1, 9]}},
        description="Look up A's stock ({{ s }} is not it), then say a word.",
        success=[{"kind": "output", "regex": "\\w"}],
        solution={"calls": [{"tool": "get_stock", "args": {"product_id": "A"}}], "answer": "done"},
    )
    result = invoke("check-task", guessable)
    assert ": oracle: " not in result.out
    assert "the random agent passes" in _finding(result, "random")


def test_a_check_that_holds_before_the_agent_acts_is_found(invoke: Invoke, tmp_path: Path) -> None:
    # a pattern that the empty answer of an agent doing nothing matches too
    suite = _suite(
        tmp_path,
        success=[
            {"kind": "output", "name": "says_stock", "number": "{{ s }}"},
            {"kind": "output", "name": "anything", "regex": "^"},
        ],
    )
    result = invoke("check-task", suite)
    assert "an agent that does nothing gets credit" in _finding(result, "noop")
    assert "noop: progress check(s) ['anything'] pass on the initial world" in result.out


def test_a_flawed_agent_that_passes_its_weakness_is_found(invoke: Invoke, tmp_path: Path) -> None:
    suite = _suite(tmp_path, category="ambiguous")  # nothing to ask: never-asks passes it
    line = _finding(invoke("check-task", suite), "never-asks")
    assert "must fail (an ambiguous task needs the user's answer)" in line


def test_a_scaffold_marker_left_in_is_found(invoke: Invoke, tmp_path: Path) -> None:
    suite = _suite(tmp_path, description="FILL IN: how many units of product A are in stock?")
    assert "still say FILL IN" in _finding(invoke("check-task", suite), "scaffold")


def test_hostile_and_missing_targets_exit_2_without_running(invoke: Invoke, tmp_path: Path) -> None:
    missing = invoke("check-task", tmp_path / "nope.yaml")
    assert missing.code == 2 and "Traceback" not in missing.err
    broken = write_yaml(tmp_path / "suite2" / "tasks" / "x.yaml", {**GOOD, "id": "x", "tools": 5})
    write_yaml(tmp_path / "suite2" / "suite.yaml", {"name": "s", "version": "1", "canary": "c"})
    result = invoke("check-task", broken)
    assert result.code == 2 and "x.yaml:" in result.err and "nothing was run" in result.err
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [*a]\n", encoding="utf-8")
    assert invoke("check-task", bomb).code == 2
    unknown_tool = _suite(tmp_path, tools=["get_stock", "no_such_tool"])
    result = invoke("check-task", unknown_tool)
    assert result.code == 2 and "no tool 'no_such_tool'" in result.err


def test_a_loose_draft_outside_any_suite_is_checked(invoke: Invoke, tmp_path: Path) -> None:
    draft = write_yaml(tmp_path / "drafts" / "stock.yaml", GOOD)
    result = invoke("check-task", draft)
    assert result.code == 0, (result.out, result.err)
    assert "of draft" in result.err
