"""Answers that commit: hedged answers fail output checks; honest ones with other figures pass."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.scoring.checks._commit import (
    number_hedge,
    option_sets,
    regex_options,
    text_hedge,
    world_dump,
    world_values,
)

from .scoring_kit import check

SHOP = {
    "products": {
        "P1": {"name": "Kettle", "stock": 9},
        "P2": {"name": "Drill", "stock": 4},
        "P3": {"name": "Toaster", "stock": 2},
    }
}
SHOP_TASK: dict[str, Any] = {
    "description": "Which product has the lowest stock? Restock if below 5.",
    "world": {"records": SHOP},
}
PRICE = {"kind": "output", "number": 12.5, "tolerance": 0.01}


@pytest.mark.parametrize(
    "answer",
    [
        "The price is 12.50 EUR or 15.00 EUR.",
        "It costs $12.50 or $15",
        "Either 12.5 or 13.5.",
        "12.5/14 EUR",
        "12.5-14 EUR",
        "Somewhere between 10 and 12.5 EUR.",
        "12.5, 14.",
        "It is 12.5 EUR. Maybe 14 EUR though, I am not sure.",
        "Probably 12.5 EUR; it could be 13 EUR as well.",
        "12.5 EUR (or possibly 13 EUR)",
        "12.5 13.5",
        " ".join(str(n / 2) for n in range(200)),  # a spray of numbers, 12.5 among them
        "\n".join(str(n / 2) for n in range(20, 30)),  # one per line
        "$12.5 $14",
        "12.5;13.5;14",
        "12.5|13",
    ],
)
def test_a_number_with_a_rival_fails(answer: str) -> None:
    result = check(PRICE, answer=answer)
    assert not result.passed, result.detail
    assert "does not commit" in result.detail


@pytest.mark.parametrize(
    "answer",
    [
        "It costs 12.50 EUR.",
        "On 2026-03-12 the price was 12.5 EUR.",
        "Order O2001 (3 units) costs 12.5 EUR in total.",
        "12.5 EUR after a 2.5 EUR discount.",
        "Moved 150 EUR; the price is 12.5 EUR.",
        "Invoice INV-2041, line 7: 12.5 EUR at 10:30.",
        "The price is 12.5 EUR, up from 11 EUR last month.",
        "3 items, 12.5 EUR in all; ticket T-14 is closed.",
        "12.5 (10 + 2.5)",
        "The total is 12.5 (10 plus 2.5).",
    ],
)
def test_a_committed_number_passes_beside_dates_ids_and_other_figures(answer: str) -> None:
    result = check(PRICE, answer=answer)
    assert result.passed, result.detail


def test_the_questions_own_figures_are_never_rivals() -> None:
    asked = "Is 20 EUR enough for the 12.5 EUR item, or would 15 EUR do?"
    assert number_hedge("12.5 EUR or 15 EUR", 12.5, 0.01, asked) is None
    assert number_hedge("12.5 EUR or 16 EUR", 12.5, 0.01, asked) is not None


def test_allow_multiple_accepts_several_values() -> None:
    assert check({**PRICE, "allow_multiple": True}, answer="12.5 EUR or 15 EUR").passed


@pytest.mark.parametrize(
    ("spec", "answer"),
    [
        ({"contains": ["P3"]}, "P3 or P2"),
        ({"contains": ["P3"]}, "Either P3 or P1."),
        ({"contains": ["P3"]}, "P1, P2, P3"),
        ({"contains": ["P3"]}, "It is P3, maybe P2."),
        ({"contains": ["Toaster"]}, "The Toaster or the Drill."),
        ({"any_of": ["Toaster", "P3"]}, "Kettle, Drill, Toaster: one of these."),
        ({"equals": "P3"}, "P3 / P2"),
    ],
)
def test_naming_rival_options_fails(spec: dict[str, Any], answer: str) -> None:
    result = check({"kind": "output", **spec}, answer=answer, **SHOP_TASK)
    assert not result.passed, result.detail


@pytest.mark.parametrize(
    ("spec", "answer"),
    [
        ({"contains": ["P3"]}, "P3 has the lowest stock (2)."),
        ({"contains": ["P3"]}, "P3 (Toaster) has the lowest stock: 2, below P2 with 4."),
        ({"contains": ["Toaster"]}, "The Toaster: 2 left, fewer than the Drill."),
        ({"contains": ["P3", "P2"]}, "P3 and P2 are below 5."),
        ({"any_of": ["P3", "Toaster"]}, "P3, the Toaster."),
        ({"equals": "P3"}, "P3"),
    ],
)
def test_a_committed_option_passes(spec: dict[str, Any], answer: str) -> None:
    result = check({"kind": "output", **spec}, answer=answer, **SHOP_TASK)
    assert result.passed, result.detail


def test_listing_every_option_is_fine_when_the_task_wants_a_list() -> None:
    spec = {"kind": "output", "contains": ["P3"], "allow_multiple": True}
    assert check(spec, answer="P1, P2, P3", **SHOP_TASK).passed


def test_options_come_from_the_world() -> None:
    sets = option_sets(SHOP)
    assert {"P1", "P2", "P3"} in sets
    assert {"Kettle", "Drill", "Toaster"} in sets
    assert text_hedge("Kettle or Toaster", ["Toaster"], SHOP, "") is not None
    assert text_hedge("Kettle or Toaster", ["Toaster"], SHOP, "Kettle or Toaster?") is None
    assert text_hedge("blue or red", ["blue"], SHOP, "") is None  # not options of the world


@pytest.mark.parametrize(
    ("answer", "passed", "said"),
    [
        ('{"price": 12.5, "sku": "P3"}', True, "right"),
        ('{"price": 12.5, "price": 15, "sku": "P3"}', False, "given twice"),
        ('{"price": 12.5, "price": 12.5, "sku": "P3"}', True, "right"),
        ('{"price": [12.5, 15], "sku": "P3"}', False, "expected 12.5"),
    ],
)
def test_json_answers_commit_to_one_value_per_field(answer: str, passed: bool, said: str) -> None:
    spec = {"kind": "output", "json": {"price": 12.5, "sku": "P3"}}
    result = check(spec, answer=answer)
    assert result.passed is passed and said in result.detail, result.detail


def test_hostile_answers_do_not_crash_the_rule() -> None:
    hostile = ["", "or or or", "- / \u2013 \u2014", "1" * 5000, "$$$ 12.5 %%% or", "\x00 \u202e"]
    for answer in hostile:
        check(PRICE, answer=answer)
        check({"kind": "output", "contains": ["P3"]}, answer=answer, **SHOP_TASK)


# An answer that dumps everything it saw (every id, every date) is not an answer.

EVENTS_TASK: dict[str, Any] = {
    "description": "Which day of that week has the most meetings? Answer with the date.",
    "world": {
        "records": {
            "events": {
                f"B{i}": {"title": f"Meeting {i}", "date": f"2026-03-{9 + i % 5:02d}"}
                for i in range(10)
            }
        }
    },
}


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("M1 M2 M3 M4", False),  # the digits of ids are not a count
        ("B2, x86, 2nd", False),
        ("There are 2 unread emails (M2 and M4).", True),
        ("2.", True),
    ],
)
def test_the_digits_inside_ids_and_words_are_not_a_stated_number(answer: str, passed: bool) -> None:
    result = check({"kind": "output", "number": 2}, answer=answer)
    assert result.passed is passed, result.detail


def test_naming_every_date_of_the_world_is_a_hedge() -> None:
    spec = {"kind": "output", "contains": ["2026-03-11"]}
    every = ". ".join(f"Meeting on 2026-03-{d:02d}" for d in range(9, 14))
    result = check(spec, answer=every, **EVENTS_TASK)
    assert not result.passed and "every option" in result.detail
    assert check(spec, answer="2026-03-11, with 2 meetings.", **EVENTS_TASK).passed


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("P3", True),
        ("P3 (Toaster), 2 left.", True),
        ("P1 P2 P3", False),  # every product: a dump, not an answer
        ("P3 or P2", False),
    ],
)
def test_a_regex_answer_commits_to_one_option(answer: str, passed: bool) -> None:
    result = check({"kind": "output", "regex": "\\bP3\\b"}, answer=answer, **SHOP_TASK)
    assert result.passed is passed, result.detail


CONTACTS_TASK: dict[str, Any] = {
    "description": "Pay Sam 20 EUR.",
    "world": {
        "records": {
            "contacts": {
                "C1": {"name": "Sam Lee"},
                "C2": {"name": "Sam Rivera"},
                "C3": {"name": "Alex Kim"},
                "C4": {"name": "Jo Park"},
            }
        }
    },
}
BOTH_SAMS = {"kind": "evidence", "require": ["Sam Lee", "Sam Rivera"]}


@pytest.mark.parametrize(
    ("say", "answer", "hits"),
    [
        ([], "Which Sam: Sam Lee or Sam Rivera?", 2),
        ([], "Sam Lee, Sam Rivera, Alex Kim, Jo Park", 0),  # every contact: points out none
        (["Contacts: Sam Lee, Sam Rivera, Alex Kim, Jo Park."], "Sam Lee or Sam Rivera?", 2),
        (["Contacts: Sam Lee, Sam Rivera, Alex Kim, Jo Park."], "Which one?", 0),
    ],
)
def test_key_evidence_named_only_in_a_dump_of_every_option_is_not_found(
    say: list[str], answer: str, hits: int
) -> None:
    result = check(BOTH_SAMS, answer=answer, say=say, **CONTACTS_TASK)
    assert len(result.data["hits"]) == hits, result.detail
    assert result.passed is (hits == 2)


def test_evidence_that_is_every_option_may_be_listed() -> None:
    spec = {"kind": "evidence", "require": ["P1", "P2", "P3"]}
    assert check(spec, answer="P1, P2 and P3 are all low.", **SHOP_TASK).passed


def test_an_answer_that_repeats_most_of_the_world_does_not_commit() -> None:
    spec = {"kind": "output", "contains": ["Sam Lee"]}
    dump = "C1 Sam Lee\nC2 Sam Rivera\nC3 Alex Kim\nC4 Jo Park"
    result = check(spec, answer=dump, **CONTACTS_TASK)
    assert not result.passed and "repeats most of the world" in result.detail
    assert check(spec, answer="I paid Sam Lee (C1).", **CONTACTS_TASK).passed
    evidence = check(BOTH_SAMS, answer=dump, **CONTACTS_TASK)
    assert evidence.data["hits"] == [] and not evidence.passed


def test_a_small_world_is_never_read_as_dumped() -> None:
    # Six values (three ids, three names; the stock figures are bare): too few to tell.
    spec = {"kind": "output", "contains": ["P3"]}
    assert check(spec, answer="P3 (Toaster) has 2; P1 Kettle 9", **SHOP_TASK).passed


def test_a_pattern_that_times_out_ends_the_scan_of_options_at_once() -> None:
    asked: list[str] = []

    def times_out(text: str) -> object:
        asked.append(text)
        return "timed out"

    assert regex_options(times_out, SHOP) == []
    assert len(asked) == 1  # one timeout, not one per option of the world


def test_a_huge_answer_repeating_one_value_is_counted_once() -> None:
    values = world_values(CONTACTS_TASK["world"]["records"], "Pay Sam 20 EUR.")
    assert len(values) == 8  # four ids, four names
    assert world_dump("Sam Lee " * 200_000, values) is None  # one value of eight
    assert world_dump("\n".join(values) * 1000, values) is not None
