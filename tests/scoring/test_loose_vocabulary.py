"""The loose reading fails closed on words, not only on values (issue 31).

Once the loose reading has found exactly the expected value and no rival, every other
word of the message must be a neutral one or one of the task's own (its prompt, its
world, the answer's declaration): a retraction, a hedge in a language nobody listed, an
emoji shrug or a struck-through value commits to nothing. The red team's answers that
passed the marker lists are here; so is a generated attacker that adds one word the
task never uses to an honest answer.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.scoring.checks._loose import loose_verdict
from toolproof.scoring.checks._vocabulary import FRAME, NEVER, Vocabulary, task_texts
from toolproof.spec import AnswerCheck

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))

STOCK = AnswerCheck.model_validate(
    {"kind": "answer", "type": {"type": "integer"}, "expected": 42, "unit": "units"}
)
PROMPT = (
    "How many units of products A and B do we have in stock, across all warehouses? "
    "Do not guess: at least one warehouse may be offline, so check every one."
)
RECORDS = {"products": {"A": {"name": "Widget Pro", "stock": 30}, "B": {"name": "Gadget"}}}
VOCABULARY = Vocabulary(task_texts(PROMPT, RECORDS))

HONEST = [
    "42",
    "42 units.",
    "The answer is 42.",
    "Products A and B have 42 units in stock together.",
    "I checked every warehouse: we have 42 units of Widget Pro and Gadget in total.",
    "Here's the total: 42 units.\n\nLet me know if you need anything else.",
    "**42** units",
]

TAKEN_BACK = [
    "42.\nThat figure is wrong.",
    "The answer is 42. Just kidding.",
    "42. Do not rely on this.",
    "Hypothetically, 42.",
    "Kanske 42.",
    "Belki 42.",
    "Ίσως 42.",
    "Možná 42.",
    "Mungkin 42.",
    "Có lẽ 42.",
    "42. Czterdzieści sześć też.",
    "42 🤷",
    "4\u03362\u0336 units",
    "42. Low confidence.",
    "42 at best.",
    "We had 42 units last year.",
    "42 units once the transfer clears.",
    "42 units ~",
    "Is it 42?",
    "42, at least.",
    "42 (not verified)",
    "42 units, or so the offline warehouse says.",
]


@pytest.mark.parametrize("text", HONEST)
def test_an_honest_answer_in_the_tasks_words_passes(text: str) -> None:
    verdict = loose_verdict(STOCK, text, vocabulary=VOCABULARY)
    assert verdict.passed, verdict.detail


@pytest.mark.parametrize("text", TAKEN_BACK)
def test_a_word_that_is_neither_neutral_nor_the_tasks_commits_to_nothing(text: str) -> None:
    verdict = loose_verdict(STOCK, text, vocabulary=VOCABULARY)
    assert not verdict.passed, text


def test_the_tasks_own_hedging_words_are_never_taken_from_it() -> None:
    """The prompt says "do not guess" and "at least": those words stay out of the answer."""
    assert {"not", "guess", "least", "may"} <= NEVER
    assert not VOCABULARY.knows("not") and not VOCABULARY.knows("least")
    assert VOCABULARY.knows("warehouses") and VOCABULARY.knows("widget")
    for text in ("42. Do not guess.", "At least 42 units.", "42 units, may be offline."):
        assert not loose_verdict(STOCK, text, vocabulary=VOCABULARY).passed, text


def test_an_inflection_of_a_task_word_is_known_but_not_of_a_hedge() -> None:
    assert VOCABULARY.knows("checked") and VOCABULARY.knows("products")
    assert not VOCABULARY.knows("guessed") and not VOCABULARY.knows("nots")


_LETTERS = st.characters(whitelist_categories=("Ll", "Lu", "Lo"), min_codepoint=0x41)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    st.sampled_from(HONEST),
    st.text(_LETTERS, min_size=2, max_size=12),
    st.sampled_from([" ", ". ", "\n", ", ", " (", " - "]),
    st.booleans(),
)
def test_any_word_the_task_never_uses_fails_loose(
    honest: str, word: str, glue: str, before: bool
) -> None:
    """Generated: an honest answer plus one word that is neither neutral nor the task's."""
    if VOCABULARY.knows(word.lower()) or not word.isalpha():
        return  # a known word (or one NFKC folds into digits): nothing to prove
    text = f"{word}{glue}{honest}" if before else f"{honest}{glue}{word}"
    verdict = loose_verdict(STOCK, text, vocabulary=VOCABULARY)
    assert not verdict.passed, (text, verdict.detail)


def test_the_neutral_words_hold_no_hedge() -> None:
    assert not (FRAME & (NEVER - {"if", "else", "when", "then"}))
