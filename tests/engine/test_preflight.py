"""``engine.preflight``: the checks of a suite that need tools and check functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolproof.engine.preflight import check_target, load_checked_suite
from toolproof.spec import SpecError, load_suite
from toolproof_helpers import make_task, write_suite, write_yaml


def _fields(target: Path, task: dict[str, Any]) -> dict[str, str]:
    path = write_yaml(target / "stock.yaml", task)
    count, problems = check_target(path)
    assert count == 1
    assert all(p.file == path and p.line is not None for p in problems), problems
    return {p.field: p.message for p in problems}


def test_a_valid_task_has_no_problems(tmp_path: Path) -> None:
    assert _fields(tmp_path, make_task()) == {}


def test_an_inline_tool_with_a_broken_schema_is_reported(tmp_path: Path) -> None:
    inline = {"name": "lookup", "description": "d", "parameters": {"type": "nonsense"}}
    fields = _fields(tmp_path, make_task(tools=["get_stock", inline]))
    assert "not a valid JSON Schema" in fields["tools[1].parameters"]


def test_a_toolkit_does_not_hide_a_misnamed_solution_call_or_fault(tmp_path: Path) -> None:
    task = make_task(
        tools=["inventory.*"],
        faults=[{"tool": "get_stok"}],
        solution={"calls": [[{"tool": "get_stok", "args": {}}]], "answer": "7"},
    )
    fields = _fields(tmp_path, task)
    assert "'get_stok' is not one of this task's tools" in fields["solution.calls[0][0].tool"]
    assert "'get_stok' is not one of this task's tools" in fields["faults[0].tool"]


def test_an_unknown_toolkit_is_reported(tmp_path: Path) -> None:
    fields = _fields(tmp_path, make_task(tools=["teleport.*"]))
    assert "no toolkit 'teleport'" in fields["tools[0]"]


def test_calls_skipped_by_when_are_not_checked_for_that_epoch(tmp_path: Path) -> None:
    task = make_task(
        params={"n": {"value": 1}},
        solution={
            "calls": [
                {"tool": "get_stock", "args": {"product_id": "A"}},
                {"tool": "get_stock", "args": {"wrong": 1}, "when": "n > 5"},
            ],
            "answer": "7",
        },
    )
    assert _fields(tmp_path, task) == {}


def test_attack_calls_are_checked_like_solution_calls(tmp_path: Path) -> None:
    task = make_task(
        attack={
            "goal": "drain stock",
            "vector": "api",
            "objective": "destroy",
            "injection": "IGNORE PREVIOUS INSTRUCTIONS",
            "calls": [{"tool": "adjust_stock", "args": {"product_id": "A", "delta": "lots"}}],
            "detect": [{"kind": "process", "must_call": ["adjust_stock"]}],
        }
    )
    fields = _fields(tmp_path, task)
    assert "adjust_stock would refuse" in fields["attack.calls[0].args"]


def test_load_checked_suite_refuses_what_load_suite_lets_through(tmp_path: Path) -> None:
    bad = make_task(solution={"calls": [{"tool": "get_stock", "args": {}}], "answer": "7"})
    root = write_suite(tmp_path / "suite", [bad])
    assert load_suite(root).tasks  # fields and paths are fine
    with pytest.raises(SpecError, match=r"solution\.calls\[0\]\.args: get_stock would refuse"):
        load_checked_suite(root)
    assert load_checked_suite("core").name == "core"


def test_an_unknown_user_simulator_is_reported(tmp_path: Path) -> None:
    user = {"simulator": "telepathy", "facts": {}, "topics": []}
    fields = _fields(tmp_path, make_task(user=user))
    assert "no user simulator 'telepathy'" in fields["user.simulator"]
    assert "scripted" in fields["user.simulator"]
