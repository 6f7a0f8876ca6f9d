"""Each built-in check kind, passing and failing for the reason it states."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from toolproof.worlds import World

from .scoring_kit import check

PRODUCTS = {"A": {"name": "Bolt", "stock": 7, "active": True}, "B": {"name": "Nut", "stock": 2}}
WORKSPACE = {"files": {"app/config.ini": "port = 5000\n", "README.md": "Read me.\n"}}


def _restock(world: World) -> None:
    world.records["products"]["A"]["stock"] = 9
    world.records["orders"] = {"O1": {"status": "pending"}}


def _with(records: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return {"world": {"records": records or {"products": PRODUCTS}}, **kwargs}


# ---- state: records ----------------------------------------------------------------------


def test_state_records_pass_and_fail_with_partial_credit() -> None:
    spec = {"kind": "state", "records": {"products.A.stock": 9, "orders.O1.status": "shipped"}}
    result = check(spec, mutate=_restock, **_with())
    assert not result.passed and result.score == 0.5
    assert "orders.O1.status is 'pending', expected 'shipped'" in result.detail
    spec["records"]["orders.O1.status"] = "pending"
    assert check(spec, mutate=_restock, **_with()).passed


def test_state_numbers_compare_by_value_and_bools_by_identity() -> None:
    assert check({"kind": "state", "records": {"products.A.stock": 7.0}}, **_with()).passed
    assert check({"kind": "state", "records": {"products.A.active": True}}, **_with()).passed
    assert not check({"kind": "state", "records": {"products.A.active": 1}}, **_with()).passed
    assert not check({"kind": "state", "records": {"products.A.stock": True}}, **_with()).passed


def test_state_absent_and_missing_paths() -> None:
    absent = {"kind": "state", "records": {"products.C": {"absent": True}}}
    assert check(absent, **_with()).passed
    present = {"kind": "state", "records": {"products.B": {"absent": True}}}
    assert "should be absent" in check(present, **_with()).detail
    missing = check({"kind": "state", "records": {"products.C.stock": 1}}, **_with())
    assert "products.C.stock is missing" in missing.detail


def test_state_unchanged_elsewhere_catches_collateral_damage() -> None:
    spec = {"kind": "state", "records": {"products.A.stock": 9}, "unchanged_elsewhere": True}

    def also_breaks_b(world: World) -> None:
        _restock(world)
        world.records["products"]["B"]["stock"] = 0

    result = check(spec, mutate=also_breaks_b, **_with())
    assert not result.passed and result.score <= 0.5
    assert "unexpected change to orders.O1.status" in result.detail
    assert "unexpected change to products.B.stock" in result.detail
    assert result.data["collateral"]


def test_state_allow_changes_takes_globs() -> None:
    spec = {
        "kind": "state",
        "records": {"products.A.stock": 9},
        "unchanged_elsewhere": True,
        "allow_changes": ["orders.*"],
    }
    assert check(spec, mutate=_restock, **_with()).passed
    untouched = {"kind": "state", "unchanged_elsewhere": True}
    assert check(untouched, **_with()).passed
    assert not check(untouched, mutate=_restock, **_with()).passed


def _edit(world: World) -> None:
    assert world.workspace is not None
    (world.workspace.root / "app" / "config.ini").write_text("port = 8080\n")
    (world.workspace.root / "notes.txt").write_text("scratch")


def test_state_files_exact_content_and_expectations() -> None:
    spec = {
        "kind": "state",
        "files": {
            "/workspace/app/config.ini": "port = 8080",  # a trailing newline is ignored
            "README.md": {"contains": ["Read"], "not_contains": ["TODO"], "regex": r"^Read me\.$"},
            "notes.txt": {"exists": True},
            "gone.txt": {"exists": False},
        },
    }
    assert check(spec, mutate=_edit, world=WORKSPACE).passed
    failing = check(
        {
            "kind": "state",
            "files": {
                "app/config.ini": "port = 5000",
                "README.md": {"contains": ["nope"], "regex": "^x"},
                "notes.txt": {"exists": False},
                "missing.txt": "x",
            },
        },
        mutate=_edit,
        world=WORKSPACE,
    )
    assert not failing.passed
    for said in (
        "app/config.ini holds 'port = 8080\\n', expected 'port = 5000'",
        "README.md lacks 'nope'",
        "README.md does not match /^x/",
        "notes.txt should not exist",
        "missing.txt does not exist",
    ):
        assert said in failing.detail


def test_state_file_hash_protects_a_file() -> None:
    sha = hashlib.sha256(b"port = 5000\n").hexdigest()
    spec = {"kind": "state", "files": {"app/config.ini": {"sha256": sha}}}
    assert check(spec, world=WORKSPACE).passed
    assert "was modified" in check(spec, mutate=_edit, world=WORKSPACE).detail


def test_state_files_unchanged_elsewhere() -> None:
    spec = {
        "kind": "state",
        "files": {"app/config.ini": "port = 8080"},
        "unchanged_elsewhere": True,
    }
    result = check(spec, mutate=_edit, world=WORKSPACE)
    assert not result.passed and "unexpected change to notes.txt" in result.detail
    spec["allow_changes"] = ["*.txt"]
    assert check(spec, mutate=_edit, world=WORKSPACE).passed


# ---- output ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "answer", "passed"),
    [
        ({"equals": "Paris"}, "  paris \n", True),
        ({"equals": "Paris", "case_sensitive": True}, "paris", False),
        ({"equals": "Paris"}, "Paris, France", False),
        ({"contains": ["O2001", "pending"]}, "Order O2001 is PENDING.", True),
        ({"contains": ["O2001", "shipped"]}, "Order O2001 is pending.", False),
        ({"not_contains": ["sorry"]}, "Sorry, I cannot.", False),
        ({"not_contains": ["sorry"]}, "Done.", True),
        ({"any_of": ["not found", "no such"]}, "There is no such product.", True),
        ({"any_of": ["not found", "no such"]}, "It is out of stock.", False),
        ({"regex": r"\bR2\b"}, "r2 has the lowest stock", True),
        ({"regex": r"\bR2\b"}, "R22 has the lowest stock", False),
        ({"number": 1234.5}, "The total is 1,234.50 EUR.", True),
        ({"number": 42}, "There are 41 units.", False),
        ({"number": 3.14, "tolerance": 0.01}, "About 3.141.", True),
        ({"number": -4}, "It fell to -4 degrees.", True),
        ({"json": {"id": "O1", "qty": 2}}, 'Here: {"id": "O1", "qty": 2, "x": 1}', True),
        ({"json": {"id": "O1", "qty": 2}}, '{"id": "O1", "qty": 3}', False),
        ({"json": {"id": "O1"}}, "no json at all", False),
        ({"equals": "7", "contains": ["7"]}, "7", True),
    ],
)
def test_output_checks(spec: dict[str, Any], answer: str, passed: bool) -> None:
    result = check({"kind": "output", **spec}, answer=answer)
    assert result.passed is passed, result.detail
    assert result.score == (1.0 if passed else 0.0)
    if not passed:
        assert "answer" in result.detail


def test_output_with_no_answer_fails() -> None:
    assert not check({"kind": "output", "contains": ["x"]}, answer=None).passed


# ---- process -----------------------------------------------------------------------------

CALLS: list[Any] = [
    ("get_stock", {"product_id": "A"}, True),  # failed
    ("get_stock", {"product_id": "B"}),
    ("adjust_stock", {"product_id": "a ", "delta": 2}),
    ("get_stock", {"product_id": "A"}),
]


@pytest.mark.parametrize(
    ("spec", "passed", "said"),
    [
        ({"must_call": ["get_stock", "adjust_stock"]}, True, ""),
        ({"must_call": [{"tool": "adjust_stock", "args": {"product_id": "A"}}]}, True, ""),
        (
            {"must_call": [{"tool": "adjust_stock", "args": {"delta": 3}}]},
            False,
            "never successfully",
        ),
        ({"must_call": ["set_price"]}, False, "never successfully called set_price"),
        ({"must_not_call": ["set_price"]}, True, ""),
        (
            {"must_not_call": [{"tool": "get_stock", "args": {"product_id": "B"}}]},
            False,
            "not allowed",
        ),
        ({"max_calls": 4}, True, ""),
        ({"max_calls": 3}, False, "4 tool calls, at most 3"),
        ({"max_calls": {"get_stock": 3, "adjust_stock": 1}}, True, ""),
        ({"max_calls": {"get_stock": 2}}, False, "3 calls to get_stock, at most 2"),
        ({"order": ["get_stock", "adjust_stock"]}, True, ""),
        ({"order": ["adjust_stock", "get_stock"]}, False, "not in the order"),
        ({"order": ["get_stock", "set_price"]}, False, "never successfully called set_price"),
        ({"max_errors": 1}, True, ""),
        ({"max_errors": 0}, False, "1 failed tool calls, at most 0"),
    ],
)
def test_process_checks(spec: dict[str, Any], passed: bool, said: str) -> None:
    result = check({"kind": "process", **spec}, calls=CALLS)
    assert result.passed is passed, result.detail
    assert said in result.detail


def test_a_failed_call_does_not_satisfy_must_call() -> None:
    spec = {"kind": "process", "must_call": [{"tool": "get_stock", "args": {"product_id": "A"}}]}
    assert not check(spec, calls=CALLS[:1]).passed
    assert check(spec, calls=CALLS).passed


# ---- evidence ----------------------------------------------------------------------------


def test_evidence_requires_all_by_default_with_partial_credit() -> None:
    spec = {"kind": "evidence", "require": ["12", "17", "NRT-4"]}
    result = check(spec, answer="NRT-4 read 12 degrees")
    assert not result.passed and result.score == pytest.approx(2 / 3)
    assert result.data["missing"] == ["17"]
    assert check(spec, answer="nrt-4: 12 and 17").passed


def test_evidence_min_hits() -> None:
    spec = {"kind": "evidence", "require": ["a1", "b2", "c3"], "min_hits": 2}
    assert check(spec, answer="a1 and c3").passed
    assert not check(spec, answer="only a1").passed


def test_evidence_forbid_vetoes() -> None:
    spec = {"kind": "evidence", "require": ["O1"], "forbid": ["Titanium spork"]}
    result = check(spec, answer="O1: I restocked the titanium spork")
    assert result.veto and not result.passed and result.score == 0.0
    assert "forbidden output" in result.detail
    sensitive = {"kind": "evidence", "forbid": ["Spork"], "case_sensitive": True}
    assert not check(sensitive, answer="a spork").veto


def test_evidence_where_searches_transcript_or_tool_arguments() -> None:
    in_args = {"kind": "evidence", "forbid": ["hunter2"], "where": "tool_args"}
    calls: list[Any] = [("get_stock", {"product_id": "hunter2"})]
    assert check(in_args, calls=calls, answer="done").veto
    assert not check({**in_args, "where": "answer"}, calls=calls, answer="done").veto
    said = {"kind": "evidence", "require": ["thinking aloud"], "where": "transcript"}
    assert check(said, say=["I am thinking aloud"], answer="done").passed
    assert not check({**said, "where": "answer"}, say=["I am thinking aloud"], answer="done").passed


# ---- custom ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "args", "passed", "score", "said"),
    [
        ("toolproof_test_checks:answer_is", {"text": "42"}, True, 1.0, "returned True"),
        ("toolproof_test_checks:answer_is", {"text": "41"}, False, 0.0, "returned False"),
        ("toolproof_test_checks:share_of_calls", {"wanted": 4}, False, 0.25, "scored 0.25"),
        ("toolproof_test_checks:share_of_calls", {"wanted": 1}, True, 1.0, "scored 1"),
        ("toolproof_test_checks:with_detail", {}, False, 0.0, "stock of A is still 7"),
        ("toolproof_test_checks:full_result", {}, True, 1.0, "all good"),
        ("toolproof_test_checks:Namespace.stock_at_least", {"minimum": 7}, True, 1.0, ""),
    ],
)
def test_custom_checks(
    function: str, args: dict[str, Any], passed: bool, score: float, said: str
) -> None:
    spec = {"kind": "custom", "function": function, "args": args}
    result = check(spec, answer="42", calls=[("get_stock", {"product_id": "A"})], **_with())
    assert (result.passed, result.score) == (passed, score), result.detail
    assert said in result.detail
    assert not result.task_error


@pytest.mark.parametrize(
    ("function", "said"),
    [
        ("toolproof_test_checks:raising", "raised ZeroDivisionError: oops"),
        ("toolproof_test_checks:wrong_type", "returned dict, not a score"),
        ("toolproof_test_checks:nope", "has no attribute 'nope'"),
        ("toolproof_no_such_module:f", "cannot import 'toolproof_no_such_module'"),
        ("not_registered", "no check function 'not_registered'"),
        (":f", "use 'module:attr'"),
    ],
)
def test_a_broken_custom_check_is_a_task_error(function: str, said: str) -> None:
    spec = {"kind": "custom", "function": function}
    result = check(spec, answer="42", calls=[("get_stock", {"product_id": "A"})], **_with())
    assert (result.passed, result.task_error) == (False, True)
    assert result.detail.startswith("task error: ") and said in result.detail, result.detail


@pytest.mark.usefixtures("restore_registries")
def test_a_registered_check_function() -> None:
    from toolproof.scoring import check_function

    @check_function("tp_test_answer_is_long")
    def long_answer(ctx: Any, minimum: int = 3) -> bool:
        return len(ctx.trajectory.final_answer or "") >= minimum

    spec = {"kind": "custom", "function": "tp_test_answer_is_long", "args": {"minimum": 5}}
    assert check(spec, answer="a long answer").passed
    assert not check(spec, answer="no").passed
    with pytest.raises(ValueError, match="already registered"):
        check_function("tp_test_answer_is_long")(long_answer)


def test_checks_are_named_after_their_kind_and_index_unless_named() -> None:
    assert check({"kind": "output", "contains": ["x"]}, answer="x").name == "output_0"
    named = check({"kind": "output", "name": "says_x", "weight": 2, "contains": ["x"]}, answer="x")
    assert (named.name, named.weight, named.kind) == ("says_x", 2.0, "output")


def _hostile_readme(world: World) -> None:
    assert world.workspace is not None
    (world.workspace.root / "README.md").write_text("b" * 5_000 + "!")


def test_a_backtracking_regex_cannot_hold_the_scorer() -> None:
    """A hostile answer against a pattern that backtracks badly: bounded, and a failure."""
    hostile = "a" * 5_000 + "!"
    result = check({"kind": "output", "regex": r"^(a|a)*$"}, answer=hostile)
    assert not result.passed
    assert "could not be matched against /^(a|a)*$/ within 1 s" in result.detail
    files = check(
        {"kind": "state", "files": {"README.md": {"regex": r"^(\w|\w)*$"}}},
        mutate=_hostile_readme,
        world=WORKSPACE,
    )
    assert not files.passed and "could not be matched" in files.detail
