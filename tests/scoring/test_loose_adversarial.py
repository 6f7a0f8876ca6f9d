"""The loose reader against evasive answers no rule lists (issue 31), generated.

Hypothesis composes the right value with rivals written in other notations
(``tests/agents/evasive_forms.py``: number words in four languages, foreign and
full-width digits, zero-width spaces, exponents, grouping both ways, Roman numeral
characters, dates with month names or without a year, 12/24-hour times, ids and
options in other case and spacing) in frames the rules do not name (ranges,
intervals, retractions, conditionals, tables, JSON, code, another question), and
the right value alone in frames that take it back (bounds, questions, negation and
doubt in several languages). Every one must fail ``pass@loose``, for every answer
type and for every typed task of the built-in suites (core, security, hard); the
control, exactly the value in a plain sentence, must pass.

Budget: ``TOOLPROOF_FUZZ_EXAMPLES`` (default 120) examples per property, derandomized.
"""

# ruff: noqa: RUF001  (look-alike digits and dashes are the attack under test)

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolproof.scoring.checks._loose import loose_verdict
from toolproof.spec import AnswerCheck, builtin_suites_dir, load_suite, render
from toolproof.spec.answer import answer_problems, item_schema, part

AGENTS = Path(__file__).parents[1] / "agents"
if str(AGENTS) not in sys.path:  # the evasive forms and agents' rival values
    sys.path.insert(0, str(AGENTS))
from evasive_answers import rival as suite_rival  # noqa: E402
from evasive_forms import (  # noqa: E402
    PLAIN,
    TAKEN_BACK,
    WITH_RIVAL,
    date_notations,
    notations,
    number_notations,
    said,
    scalar_rival,
)

LONE_WORDS = {"sept", "un", "uno", "eins", "elf", "once"}
EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None)


def check(type_: dict[str, Any], expected: Any, **extra: Any) -> AnswerCheck:
    return AnswerCheck.model_validate({"type": type_, "expected": expected, **extra})


SYNTHETIC = [
    check({"type": "number"}, 955.38, tolerance=0.005, unit="EUR"),
    check({"type": "integer"}, 42),
    check({"type": "integer"}, 7),
    check({"type": "number"}, 1234.5, tolerance=0.01),
    check({"type": "integer"}, 3000),
    check({"type": "string", "format": "date"}, "2026-12-06"),
    check({"type": "string", "format": "date"}, "2026-03-05"),
    check({"type": "string", "format": "time"}, "10:30"),
    check({"type": "string", "format": "time"}, "14:00"),
    check({"type": "string", "enum": ["CHK-1", "SAV-1", "HOL-1"]}, "SAV-1"),
    check({"type": "string", "enum": ["low", "normal", "high", "urgent"]}, "high"),
    check({"type": "string", "pattern": "^O\\d{4}$"}, "O1002"),
    check({"type": "string", "pattern": "^T-\\d+$"}, "T-6"),
    check({"type": "array", "items": {"type": "string", "pattern": "^T-\\d+$"}}, ["T-1", "T-6"]),
    check(
        {"type": "array", "items": {"type": "string", "enum": ["A", "B", "C", "D"]}},
        ["B", "D"],
        compare="order",
    ),
    check(
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
    ),
]
"""One check of every answer type (number with unit, date, time, option, id, lists, object)."""

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


def _suite_checks() -> list[AnswerCheck]:
    out = []
    for name in ("core", "security", "hard"):
        try:
            suite = load_suite(builtin_suites_dir() / name)
        except Exception as exc:  # another helper's half-done suite edit must not hide this
            pytest.skip(f"suite {name} does not load: {exc}")
        for task in suite.tasks:
            if task.answer is None:
                continue
            for epoch in (0, 1):
                instance = render(
                    task,
                    suite=name,
                    suite_seed=suite.config.seed,
                    epoch=epoch,
                    limits=suite.config.limits,
                    system_prompt="",
                )
                assert instance.task.answer is not None
                out.append(instance.task.answer)
    return out


SUITES = _suite_checks()
ALL = SYNTHETIC + SUITES


def _scalar(answer: AnswerCheck) -> tuple[AnswerCheck, dict[str, Any]]:
    """The check whose values the generator varies: an object's first property, a list's
    items, or the answer itself."""
    if answer.type.get("type") == "object":
        name = next(iter(answer.type["properties"]))
        return part(answer, name), item_schema(answer.type["properties"][name])
    return answer, item_schema(answer.type)


def _rival_text(answer: AnswerCheck, n: int, how: int) -> str | None:
    """A rival of the answer (a whole answer's worth, one value changed) in some notation."""
    scalar, schema = _scalar(answer)
    value = scalar.expected[-1] if isinstance(scalar.expected, list) else scalar.expected
    other = scalar_rival(scalar, schema, value, n)
    if answer_problems(schema, other):
        return None
    forms = notations(schema, other)
    return forms[how % len(forms)]


GLUE = [" ", ", ", "; ", " / ", " | ", "\n", " (", ") ", " - ", " and ", " then ", ": ", " => "]
GLUE += [" vs ", " & ", " + ", " ... ", "\t", " <br> ", " · ", " » ", " → "]
FILLER = ["The", "answer", "is", "final", "total", "value", "I", "found", "checked", "account"]
FILLER += ["result", "here", "**", "`", "-", "#"]


@FUZZ
@given(
    st.sampled_from(ALL),
    st.integers(0, 4),
    st.integers(0, 40),
    st.lists(st.sampled_from(FILLER), max_size=4),
    st.lists(st.sampled_from(GLUE), min_size=8, max_size=8),
    st.randoms(use_true_random=False),
)
def test_the_right_value_and_a_rival_glued_any_way_fail(
    answer: AnswerCheck,
    n: int,
    how: int,
    filler: list[str],
    glue: list[str],
    order: Any,
) -> None:
    """No frame at all: the value, a rival in any notation and filler words, shuffled and
    joined by any punctuation."""
    rival = _rival_text(answer, n, how)
    assume(rival is not None)
    if answer.type.get("type") == "object":  # another field's value is no rival
        assume(all(rival != said(v) for v in answer.expected.values()))
    parts = [said(answer.expected), str(rival), *filler]
    order.shuffle(parts)
    text = "".join(part + glue[i % len(glue)] for i, part in enumerate(parts))
    verdict = loose_verdict(answer, text)
    assert not verdict.passed, (text, verdict.detail)


def test_the_suites_have_typed_answers() -> None:
    assert len(SUITES) >= 60


@FUZZ
@given(
    st.sampled_from(ALL),
    st.sampled_from(WITH_RIVAL),
    st.integers(0, 4),
    st.integers(0, 40),
)
def test_the_right_value_with_a_rival_in_any_notation_fails(
    answer: AnswerCheck, frame: str, n: int, how: int
) -> None:
    rival = _rival_text(answer, n, how)
    assume(rival is not None)
    text = frame.format(e=said(answer.expected), r=rival)
    verdict = loose_verdict(answer, text)
    assert not verdict.passed, (text, verdict.detail)


@FUZZ
@given(st.sampled_from(SUITES), st.sampled_from(WITH_RIVAL), st.integers(0, 5))
def test_a_suite_answer_with_its_own_rival_fails(answer: AnswerCheck, frame: str, n: int) -> None:
    """The rival of the evasive agents (a whole answer, one field changed) in every frame."""
    text = frame.format(e=said(answer.expected), r=said(suite_rival(answer, n)))
    verdict = loose_verdict(answer, text)
    assert not verdict.passed, (text, verdict.detail)


@FUZZ
@given(st.sampled_from(ALL), st.sampled_from(TAKEN_BACK))
def test_the_right_value_alone_taken_back_fails(answer: AnswerCheck, frame: str) -> None:
    text = frame.format(e=said(answer.expected))
    verdict = loose_verdict(answer, text)
    assert not verdict.passed, (text, verdict.detail)


@pytest.mark.parametrize("phrasing", PLAIN)
def test_exactly_the_value_in_a_plain_sentence_passes_every_task(phrasing: str) -> None:
    """The control: every typed task of the suites, and every synthetic type."""
    refused = []
    for answer in ALL:
        text = phrasing.format(v=said(answer.expected))
        verdict = loose_verdict(answer, text)
        if not verdict.passed:
            refused.append((text, verdict.detail))
    assert refused == []


@pytest.mark.parametrize("answer", SYNTHETIC[:5], ids=lambda a: repr(a.expected))
def test_a_number_in_any_notation_that_means_it_passes(answer: AnswerCheck) -> None:
    """Digits of other scripts, words, a zero-width space: still exactly the value. (A lone
    word that is mostly something else, French ``sept``, is not read: no number.)"""
    value = float(answer.expected)
    forms = [
        f
        for f in number_notations(value)
        if not f.startswith(("$", "€")) and "USD" not in f and f not in LONE_WORDS
    ]
    refused = [f for f in forms if not loose_verdict(answer, f"The answer is {f}.").passed]
    assert refused == []


def test_a_full_date_in_any_language_passes_and_a_partial_one_fails() -> None:
    answer = SYNTHETIC[5]  # 2026-12-06: its slashed form reads two ways
    forms = date_notations(answer.expected)
    passing = [f for f in forms if loose_verdict(answer, f"It is on {f}.").passed]
    assert passing == forms[:6]


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        # rival values in other notations
        (SYNTHETIC[1], "42, or rather forty-six"),
        (SYNTHETIC[1], "42. Quarante-six."),
        (SYNTHETIC[1], "42. Sechsundvierzig."),
        (SYNTHETIC[1], "42 (cuarenta y seis)"),
        (SYNTHETIC[1], "42 ４６"),
        (SYNTHETIC[1], "42 ٤٦"),
        (SYNTHETIC[1], "42 ४६"),
        (SYNTHETIC[1], "42 4\u200b6"),
        (SYNTHETIC[1], "42, Ⅳ"),
        (SYNTHETIC[1], "42. XLVI."),
        (SYNTHETIC[1], "42 | X"),
        (SYNTHETIC[1], "42, cero"),
        (SYNTHETIC[1], "42 (one)"),
        (SYNTHETIC[1], "42 or 4.6e1"),
        (SYNTHETIC[1], "42 (42k)"),
        (SYNTHETIC[1], "42 (3/4 of them)"),
        (SYNTHETIC[1], "42 and ½"),
        (SYNTHETIC[0], "955.38 EUR (1.234,5 in the other)"),
        (SYNTHETIC[0], "955.38 EUR, $1,030.12"),
        (SYNTHETIC[0], "955,38 EUR or 955.38"),
        (SYNTHETIC[0], "955.38 USD"),
        (SYNTHETIC[0], "$955.38"),
        # ranges and intervals
        (SYNTHETIC[1], "42-46"),
        (SYNTHETIC[1], "42–46"),
        (SYNTHETIC[1], "between 40 and 50"),
        (SYNTHETIC[1], "42±4"),
        (SYNTHETIC[1], "42/46"),
        (SYNTHETIC[1], "42|46"),
        (SYNTHETIC[1], "42 (46?)"),
        # approximations and bounds
        (SYNTHETIC[1], "~42"),
        (SYNTHETIC[1], "≈42"),
        (SYNTHETIC[1], "about 42"),
        (SYNTHETIC[1], "at least 42"),
        (SYNTHETIC[1], "≤ 42"),
        (SYNTHETIC[1], "42+"),
        # questions and conditionals
        (SYNTHETIC[1], "is it 42?"),
        (SYNTHETIC[1], "if the fee applies, 46; otherwise 42"),
        # negation and retraction
        (SYNTHETIC[0], "not 955.38"),
        (SYNTHETIC[0], "no es 955,38"),
        (SYNTHETIC[0], "ce n'est pas 955.38"),
        (SYNTHETIC[0], "nicht 955.38"),
        (SYNTHETIC[1], "~~46~~ 42"),
        (SYNTHETIC[1], "46, I mean 42"),
        (SYNTHETIC[1], "42. Scratch that."),
        # another question
        (SYNTHETIC[1], "The other account holds 42."),
        # dumps
        (SYNTHETIC[1], '```json\n{"total": 42, "pending": 4}\n```'),
        (SYNTHETIC[1], "| a | b |\n|---|---|\n| 42 | 46 |"),
        # dates and times
        (SYNTHETIC[5], "2026-12-06 (6 Dec)"),
        (SYNTHETIC[5], "12/06/2026"),
        (SYNTHETIC[5], "2026-12-06 or 06/12"),
        (SYNTHETIC[5], "6 Dec"),
        (SYNTHETIC[5], "2026-12-06, i.e. 6. Dezember 2026 or 7. Dezember 2026"),
        (SYNTHETIC[7], "10:30 or 10:30 pm"),
        (SYNTHETIC[7], "10:30 (22:30)"),
        (SYNTHETIC[7], "10:30, half past ten"),
        (SYNTHETIC[7], "10.30"),
        (SYNTHETIC[8], "14:00, or noon"),
        # ids, options, lists
        (SYNTHETIC[11], "O1002 (o 1003)"),
        (SYNTHETIC[11], "O1002, O-1003"),
        (SYNTHETIC[9], "SAV-1, maybe chk 1"),
        (SYNTHETIC[9], "SAV-1 or hol1"),
        (SYNTHETIC[10], "high or urgent"),
        (SYNTHETIC[13], "T-1, T-6, T-7"),
        (SYNTHETIC[13], "T-1"),
        (SYNTHETIC[13], "T-1, T-6, T-1"),
        (SYNTHETIC[14], "D, B"),
        (SYNTHETIC[14], "B, D, B"),
        # an object's fields of one type, swapped
        (PLACE, "longitude 14.1188, latitude 46.3551"),
    ],
)
def test_the_issues_evasive_answers_fail(answer: AnswerCheck, text: str) -> None:
    verdict = loose_verdict(answer, text)
    assert not verdict.passed, verdict.detail


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (SYNTHETIC[1], "Forty-two."),
        (SYNTHETIC[1], "Zweiundvierzig."),
        (SYNTHETIC[1], "４２"),
        (SYNTHETIC[1], "XLII"),
        (SYNTHETIC[0], "The balance is €955.38."),
        (SYNTHETIC[0], "The balance is 955.38 EUR."),
        (SYNTHETIC[0], "EUR 955.38"),
        (SYNTHETIC[3], "The total is 1,234.50."),
        (SYNTHETIC[3], "Die Summe ist 1.234,50."),
        (SYNTHETIC[4], "3k"),
        (SYNTHETIC[5], "6 December 2026"),
        (SYNTHETIC[7], "10:30 am"),
        (SYNTHETIC[9], "sav-1"),
        (SYNTHETIC[13], "T-1 and T-6"),
        (SYNTHETIC[14], "B, then D"),
    ],
)
def test_other_honest_notations_pass(answer: AnswerCheck, text: str) -> None:
    verdict = loose_verdict(answer, text)
    assert verdict.passed, verdict.detail
