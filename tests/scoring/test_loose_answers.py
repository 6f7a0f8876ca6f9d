"""The loose reading of a free-text answer to a typed-answer task (scoring/checks/_loose.py).

It passes only when exactly one candidate of the answer's type appears (repeats allowed),
it is the expected value, and no negation or hedge stands next to it. The evasive answers
of issue 31 are fed here one by one, and Hypothesis mixes rival values into answers.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.scoring.checks._loose import loose_verdict
from toolproof.spec import AnswerCheck

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "150"))


def check(type_: dict[str, Any], expected: Any, **extra: Any) -> AnswerCheck:
    return AnswerCheck.model_validate({"type": type_, "expected": expected, **extra})


BALANCE = check({"type": "number"}, 955.38, tolerance=0.005, unit="EUR")
TOTAL = check({"type": "integer"}, 46)
SLOT = check({"type": "string", "format": "time"}, "10:30")
DAY = check({"type": "string", "format": "date"}, "2026-03-05")
ACCOUNT = check({"type": "string", "enum": ["CHK-1", "SAV-1", "HOL-1"]}, "SAV-1")
ORDER = check({"type": "string", "pattern": "^O\\d{4}$"}, "O1002")
IDS = check({"type": "array", "items": {"type": "string", "pattern": "^T-\\d+$"}}, ["T-1", "T-6"])
CODE = check({"type": "string", "maxLength": 20}, "ZX-42")


@pytest.mark.parametrize(
    ("spec", "answer"),
    [
        (BALANCE, "Your Everyday account holds 955.38 EUR."),
        (BALANCE, "955.38"),
        (BALANCE, "The balance is €955.38 (955.38 EUR)."),
        (TOTAL, "There are 46 of them."),
        (SLOT, "Booked for 10:30."),
        (SLOT, "Booked at 10:30 am."),
        (DAY, "The appointment is on 2026-03-05."),
        (DAY, "It is on March 5, 2026."),
        (ACCOUNT, "I used SAV-1."),
        (ORDER, "Your order O1002 has shipped."),
        (IDS, "Two tickets match: T-1 and T-6."),
        (CODE, '"ZX-42".'),
    ],
)
def test_exactly_the_value_passes(spec: AnswerCheck, answer: str) -> None:
    verdict = loose_verdict(spec, answer)
    assert verdict.passed, verdict.detail


@pytest.mark.parametrize(
    ("spec", "answer", "why"),
    [
        # one frame repeated with rival values
        (TOTAL, "Total 46. Total 42. Total 50.", "rival"),
        # a hedge in another language
        (TOTAL, "42 o quizás 46, no estoy seguro", "rival"),
        (TOTAL, "Es 46 o quizás más.", "hedged"),
        (TOTAL, "Vielleicht 46.", "hedged"),
        # the value negated
        (BALANCE, "the account holds not 955.38 EUR", "negated"),
        (BALANCE, "Das Konto hat nicht 955.38 EUR.", "negated"),
        (BALANCE, "955.38 EUR is wrong.", "negated"),
        (BALANCE, "El saldo no es 955.38 EUR.", "negated"),
        # the right value buried in an essay of wrong figures
        (BALANCE, "First I saw 900.12, then 955.38, later 1020.55 and 12.", "rival"),
        # the answer followed by a dump of the tool results
        (BALANCE, '955.38\n{"CHK-1": {"balance": 955.38}, "SAV-1": {"balance": 120.5}}', "rival"),
        # five candidate times from the tool results
        (SLOT, "Booked at 09:00, 10:00, 10:30, 11:00 or 11:30", "rival"),
        (DAY, "Either 2026-03-05 or 6 March 2026.", "rival"),
        (ACCOUNT, "SAV-1 or CHK-1", "rival"),
        (ACCOUNT, "Every account: CHK-1, SAV-1, HOL-1.", "rival"),
        (ORDER, "O1002 (or O1003)", "rival"),
        (IDS, "T-1, T-6 and maybe T-8", "rival"),
        (IDS, "T-1 only", "lacks"),
        (CODE, "The code is ZX-42", "exactly"),
        (TOTAL, "", "no answer"),
        (TOTAL, "I could not find it.", "no number"),
    ],
)
def test_evasive_answers_fail(spec: AnswerCheck, answer: str, why: str) -> None:
    verdict = loose_verdict(spec, answer)
    assert not verdict.passed
    assert why in verdict.detail


def test_an_id_pattern_that_backtracks_is_bounded() -> None:
    """The author's pattern is matched with a timeout against the agent's text."""
    spec = check({"type": "string", "pattern": "^(a|a)*b$"}, "aab")
    verdict = loose_verdict(spec, "a" * 5000)
    assert not verdict.passed


RIVALS = st.integers(min_value=-10_000, max_value=10_000).filter(lambda n: n != 46)
FRAMES = st.sampled_from(
    [
        "Total {}.",
        "{} o quizás",
        "The answer is {}",
        "{}",
        "Summe: {} EUR;",
        "({})",
        "— {} —",
        "{} units",
    ]
)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    st.lists(st.tuples(FRAMES, st.booleans(), RIVALS), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=6),
)
def test_any_rival_number_anywhere_fails(parts: list[tuple[str, bool, int]], at: int) -> None:
    """However the right value and rivals are framed and ordered, one rival fails it."""
    pieces = [frame.format(46 if right else rival) for frame, right, rival in parts]
    pieces.insert(min(at, len(pieces)), "Total 46.")
    answer = " ".join(pieces)
    rivals = [r for _, right, r in parts if not right]
    verdict = loose_verdict(TOTAL, answer)
    if rivals:
        assert not verdict.passed, answer
    else:  # only the right value, however often: passes unless a frame hedges it
        assert verdict.passed == ("quizás" not in answer), (answer, verdict.detail)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(["CHK-1", "SAV-1", "HOL-1"]), min_size=1, max_size=5))
def test_any_rival_option_fails(named: list[str]) -> None:
    answer = "I pick " + ", then ".join(named) + "."
    verdict = loose_verdict(ACCOUNT, answer)
    assert verdict.passed == (set(named) == {"SAV-1"}), (answer, verdict.detail)


_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
_ONES += "fifteen sixteen seventeen eighteen nineteen"
_SMALL = _ONES.split()
_TENS_WORDS = ["", "", "twenty", "thirty", "forty", "fifty"]
_TENS_WORDS += ["sixty", "seventy", "eighty", "ninety"]


def spelled(n: int, hyphen: bool = True) -> str:
    """An English spelling of 0 <= n < 1,000,000 (the test's own, independent of the reader)."""
    if n < 20:
        return _SMALL[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS_WORDS[tens] + (("-" if hyphen else " ") + _SMALL[ones] if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_SMALL[hundreds]} hundred" + (f" and {spelled(rest, hyphen)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    return f"{spelled(thousands, hyphen)} thousand" + (f" {spelled(rest, hyphen)}" if rest else "")


@pytest.mark.parametrize(
    "answer",
    [
        "46, or maybe forty-two",
        "46 or forty two",
        "Total 46. Total fifty.",
        "46 (one hundred and five in the other ledger)",
        "46, zwölf",
        "46 o doce",
        "Twelve thousand three hundred, or 46.",
    ],
)
def test_a_spelled_out_rival_fails(answer: str) -> None:
    verdict = loose_verdict(TOTAL, answer)
    assert not verdict.passed
    assert "rival" in verdict.detail


@pytest.mark.parametrize("answer", ["forty-six", "Forty six.", "There are 46 (forty-six)."])
def test_the_value_spelled_out_passes(answer: str) -> None:
    verdict = loose_verdict(TOTAL, answer)
    assert verdict.passed, verdict.detail


def test_a_lone_one_may_be_a_number_and_fails_closed() -> None:
    """``one`` may be a pronoun or a rival 1: the reader cannot tell, so loose fails (a
    false negative on loose only); inside a longer number it is read."""
    verdict = loose_verdict(TOTAL, "The one I counted: 46.")
    assert not verdict.passed and "may be a number" in verdict.detail
    assert loose_verdict(TOTAL, "forty-six").passed
    assert not loose_verdict(TOTAL, "46, or one hundred").passed


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    st.integers(min_value=0, max_value=999_999).filter(lambda n: n not in (1, 46)),
    st.booleans(),
    FRAMES,
)
def test_any_spelled_out_rival_fails(rival: int, hyphen: bool, frame: str) -> None:
    """A rival written in English words, up to the thousands, is a rival like digits."""
    answer = f"Total 46. {frame.format(spelled(rival, hyphen))}"
    verdict = loose_verdict(TOTAL, answer)
    assert not verdict.passed, (answer, verdict.detail)


PAIR = check(
    {
        "type": "object",
        "properties": {
            "stock": {"type": "string", "enum": ["ACME", "GLOBX", "INITC"]},
            "price": {"type": "number"},
        },
        "required": ["stock", "price"],
        "additionalProperties": False,
    },
    {"stock": "GLOBX", "price": 12.5},
    tolerance=0.005,
)


@pytest.mark.parametrize("answer", ["GLOBX at 12.50", "The priciest is GLOBX (12.5 EUR)."])
def test_an_object_answer_with_exactly_its_values_passes(answer: str) -> None:
    verdict = loose_verdict(PAIR, answer)
    assert verdict.passed, verdict.detail


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("GLOBX at 12.50 or ACME at 13", "stock: rival"),
        ("GLOBX at 12.50. Total 13.", "price: rival"),
        ("GLOBX, maybe 12.5", "hedged"),
        ("GLOBX at twelve", "price: rival"),
        ("12.5", "stock: the answer names no option"),
        ("GLOBX costs not 12.5", "negated"),
    ],
)
def test_an_object_answer_fails_on_any_fields_rival(answer: str, why: str) -> None:
    verdict = loose_verdict(PAIR, answer)
    assert not verdict.passed
    assert why in verdict.detail


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    st.lists(st.sampled_from(["ACME", "GLOBX", "INITC"]), min_size=1, max_size=4),
    st.lists(st.sampled_from([12.5, 13.0, 11.25, 40.0]), min_size=1, max_size=4),
)
def test_an_object_answer_passes_only_with_no_rival_in_any_field(
    stocks: list[str], prices: list[float]
) -> None:
    answer = " ".join(f"{s} at {p}." for s, p in zip(stocks, prices, strict=False))
    answer += " " + " ".join(stocks) + " " + " ".join(map(str, prices))
    verdict = loose_verdict(PAIR, answer)
    assert verdict.passed == (set(stocks) == {"GLOBX"} and set(prices) == {12.5}), (
        answer,
        verdict.detail,
    )


PLACE = check(
    {
        "type": "object",
        "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
        "required": ["latitude", "longitude"],
        "additionalProperties": False,
    },
    {"latitude": 46.3551, "longitude": 14.1188},
    tolerance=0.00005,
)


def test_another_fields_value_is_no_rival_of_this_one() -> None:
    assert loose_verdict(PLACE, "Bled is at latitude 46.3551, longitude 14.1188.").passed
    verdict = loose_verdict(PLACE, "Latitude 46.3551 or 46.36, longitude 14.1188.")
    assert not verdict.passed
    assert "latitude" in verdict.detail


def test_an_answer_longer_than_the_bound_commits_to_nothing() -> None:
    from toolproof.scoring.checks._loose import MAX_LOOSE_CHARS

    text = "The total is 46. " + "All done here. " * (MAX_LOOSE_CHARS // 15 + 1)
    verdict = loose_verdict(TOTAL, text)
    assert not verdict.passed and "too long" in verdict.detail
    assert loose_verdict(TOTAL, text[: MAX_LOOSE_CHARS - 100]).passed


def test_a_long_answer_naming_the_value_many_times_is_read_once_per_sentence() -> None:
    """Every occurrence is checked; the sentence rules are looked up once per sentence."""
    text = "SAV-1 " * 3000 + "or CHK-1"
    assert not loose_verdict(ACCOUNT, text).passed
    assert loose_verdict(ACCOUNT, "SAV-1 " * 3000).passed
