"""The loose reading of a free-text answer to a task with a typed answer: fail closed.

``pass@strict`` needs the typed value handed in with ``submit_answer``. A final
answer in free text is read here for ``pass@loose`` only, from a general parse of
the whole message rather than from a list of phrasings:

1. **Normalise** (:mod:`._normalise`): format characters (zero-width) are dropped,
   digits of any script become ASCII, other numerals (``Ⅳ``, ``½``, ``四``) become
   numbers, NFKC folds the rest, every dash is ``-``.
2. **Read every candidate of the answer's type**, in any notation the parser knows:
   numbers in digits (:mod:`._numbers`: grouping, decimal comma, exponent, ``k``) and
   in words of several languages (:mod:`._number_words`), dates and times
   (:mod:`._datetimes`), the options of an enum (case, spaces and dashes ignored:
   ``sav 1`` is ``SAV-1``), the matches of an id pattern and their spacing variants.
3. **Fail closed** on what it cannot classify but could carry a value of the type: a
   digit run that reads two ways or has letters glued on (``1,23,456``, ``46x``,
   ``4O2``), and, for a date or time answer, any number, number word or month name
   left over once the dates and times are read (``6 Dec``, ``12/06``, ``10.30``).
4. **Pass only when** exactly one distinct value appears (it may be repeated; a list
   answer names each item once), it is the expected one, no rival of the type is
   anywhere in the message (values from tool results included), and nothing takes it
   back (:mod:`._markers`): no doubt or retraction anywhere in the message, no
   negation, bound, condition, alternative, deflection, question or bounding sign in
   its sentence, and no short fragment anywhere that takes it back (``42. Or not.``).
   An answer over :data:`MAX_LOOSE_CHARS` characters commits to nothing.

The cost of failing closed is a false negative on loose only, which a typed
submission avoids. A short string answer passes only when the whole message is that
string. An object answer (a name and a number) is read property by property: each
must pass on its own; another property's value is no rival of it, but then the
properties that share values of one type must be named in their declared order (else
which value is which cannot be told: a swap fails).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex

from toolproof.spec.answer import AnswerCheck, answer_kind, item_schema
from toolproof.spec.answer import part as answer_part

from ._choices import ids, options, skeleton
from ._datetimes import Found, dates, month_words, times
from ._markers import DOUBT, SIGNS_AFTER, SIGNS_BEFORE, Sentences
from ._normalise import normalise
from ._number_words import number_words
from ._numbers import digit_numbers, roman_numbers
from ._vocabulary import Vocabulary, answer_words, unknown_words

__all__ = ["MAX_LOOSE_CHARS", "Candidate", "LooseVerdict", "candidates", "loose_verdict"]

MAX_LOOSE_CHARS = 20_000
"""A free-text answer longer than this commits to nothing: loose fails without reading it
(a value needs no essay, and the reader's time stays bounded)."""

Candidate = Found
"""One value of the answer's type found in the text, and where."""


@dataclass(frozen=True)
class Unreadable:
    """A token that could carry a value of the type but cannot be read as one."""

    what: str
    value: Any = None


@dataclass(frozen=True)
class LooseVerdict:
    """The loose reading of one free-text answer."""

    passed: bool
    detail: str
    candidates: tuple[str, ...] = ()


def _without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text with these spans blanked (so the digits of a date are not numbers)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _numbers(text: str, unit: str | None) -> tuple[list[Found], list[Unreadable]]:
    """Numbers in digits and words; dates and times are other types (blanked)."""
    plain = _without(text, [(c.start, c.end) for c in (*dates(text), *times(text))])
    found: list[Found] = []
    unreadable: list[Unreadable] = []
    for token in digit_numbers(plain, unit):
        if token.value is None:
            unreadable.append(Unreadable(token.why))
        else:
            found.append(Found(token.value, token.start, token.end))
    for token in roman_numbers(plain):
        if token.value is None:
            unreadable.append(Unreadable(token.why))
        else:
            found.append(Found(token.value, token.start, token.end))
    unsure: list[str] = []
    found += [Found(v, s, e) for v, s, e in number_words(plain, unsure)]
    unreadable += [Unreadable(f"{word!r} may be a number") for word in unsure]
    return found, unreadable


def _leftovers(text: str, spans: Sequence[tuple[int, int]], kind: str) -> list[Unreadable]:
    """What a date or time answer leaves unread: any number, number word or month name
    outside the dates and times (``6 Dec``, ``12/06``, ``half past ten``)."""
    rest = _without(text, spans)
    out = [
        Unreadable(f"{rest[t.start : t.end]!r} beside a {kind}", t.value)
        for t in digit_numbers(rest)
    ]
    unsure: list[str] = []
    out += [
        Unreadable(f"{rest[s:e]!r} beside a {kind}", v) for v, s, e in number_words(rest, unsure)
    ]
    out += [Unreadable(f"{word!r} may be a number, beside a {kind}") for word in unsure]
    if kind == "date":
        out += [
            Unreadable(f"the month {rest[m.start : m.end]!r} outside a date")
            for m in month_words(rest)
        ]
    return out


def _scan(
    check: AnswerCheck, text: str, others: Sequence[Any]
) -> tuple[list[Found], list[Unreadable]]:
    """Every candidate of the answer's type (list answers: of the item type), and what
    could carry one but cannot be read."""
    schema = item_schema(check.type)
    kind = answer_kind(schema)
    if kind == "number":
        return _numbers(text, check.unit)
    if kind in ("date", "time"):
        found = list(dates(text) if kind == "date" else times(text))
        other = list(times(text) if kind == "date" else dates(text))  # another type
        spans = [(c.start, c.end) for c in (*found, *other)]
        unread = [
            u
            for u in _leftovers(text, spans, kind)
            if u.value is None or not any(_same(check, u.value, o) for o in others)
        ]
        return found, unread
    if kind == "option":
        choices = [str(v) for v in schema["enum"]]
        return list(options(text, choices, check.case_sensitive)), []
    if kind == "id":
        return list(ids(text, str(schema["pattern"]), check.case_sensitive)), []
    return [], []


def candidates(check: AnswerCheck, text: str) -> list[Found]:
    """Every value of the answer's type in ``text`` (list answers: of the item type)."""
    return _scan(check, normalise(text), ())[0]


def _key(check: AnswerCheck, value: Any) -> Any:
    if isinstance(value, str) and not check.case_sensitive:
        return value.casefold()
    return value


def _same(check: AnswerCheck, found: Any, expected: Any) -> bool:
    if isinstance(expected, int | float) and isinstance(found, int | float):
        return abs(float(found) - float(expected)) <= max(check.tolerance, 1e-9)
    if isinstance(expected, int | float) or isinstance(found, int | float):
        return False
    if _key(check, found) == _key(check, expected):
        return True
    an_id = "pattern" in item_schema(check.type)  # an id spaced otherwise is the same id
    if an_id and isinstance(found, str) and isinstance(expected, str):
        return skeleton(found) == skeleton(expected)
    return False


_CURRENCY_SIGNS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr", "₽": "rub"}
_CURRENCY_CODES = frozenset({"eur", "usd", "gbp", "chf", "jpy", "cad", "aud", "sek", "nok", "dkk"})
_CODE_NEAR = re.compile(r"[A-Za-z]{3}")


def _currency(check: AnswerCheck, text: str, spot: Found) -> str | None:
    """Another currency written next to an amount whose declared unit is a currency
    (``955.38 USD`` or ``$955.38`` for an answer in EUR), if any."""
    unit = (check.unit or "").casefold()
    if unit not in _CURRENCY_CODES:
        return None
    near = text[max(0, spot.start - 5) : spot.start] + " " + text[spot.end : spot.end + 5]
    named = {_CURRENCY_SIGNS[ch] for ch in near if ch in _CURRENCY_SIGNS}
    named |= {m[0].casefold() for m in _CODE_NEAR.finditer(near)} & _CURRENCY_CODES
    other = sorted(named - {unit})
    return other[0].upper() if other else None


def _taken_back(sentences: Sentences, spot: Found) -> str | None:
    """What denies, bounds, asks or deflects this occurrence, if anything."""
    text = sentences.text
    before = text[: spot.start].rstrip()[-1:]
    after = text[spot.end :].lstrip()[:1]
    if before and before in SIGNS_BEFORE:
        return before
    if after and after in SIGNS_AFTER:
        return after
    rest = text[spot.end :]
    stars = len(rest) - len(rest.lstrip("*"))
    line = text[text.rfind("\n", 0, spot.start) + 1 : spot.start]
    if stars > line.count("*"):  # more than close an emphasis (**42**): a footnote
        return "*"
    if re.match(r"-?ish(?![^\W\d_])", rest, re.IGNORECASE):
        return "ish"
    return sentences.marker(spot.start, spot.end)


def _short_text(check: AnswerCheck, text: str) -> LooseVerdict:
    said = text.strip()
    for _ in range(3):  # quotes and a full stop around the value, in any order
        said = said.strip().strip("\"'`\u201c\u201d\u00ab\u00bb").rstrip(".!").strip()
    want = normalise(str(check.expected))
    if _key(check, " ".join(said.split())) == _key(check, " ".join(want.split())):
        return LooseVerdict(True, f"the answer is exactly {want!r}", (said,))
    return LooseVerdict(
        False, f"a short-text answer must be exactly the value; got {said[:80]!r}", (said[:80],)
    )


def _object_verdict(check: AnswerCheck, text: str) -> LooseVerdict:
    """An object answer: each property read on its own over the whole text, every one of
    them exactly its expected value with no rival of its type and nothing taking it back."""
    found: list[str] = []
    firsts: list[tuple[str, int]] = []  # where each field that shares a type is first named
    for name in check.type["properties"]:
        others = [  # another field's value is no rival of this one (latitude, longitude)
            v
            for k, value in check.expected.items()
            if k != name
            for v in (value if isinstance(value, list) else [value])
        ]
        field = answer_part(check, name)
        verdict = _verdict(field, text, others)
        found += [f"{name}={c}" for c in verdict.candidates]
        if not verdict.passed:
            return LooseVerdict(False, f"{name}: {verdict.detail}", tuple(found[:20]))
        seen = _scan(field, text, others)[0]
        if any(_same(field, c.value, o) for c in seen for o in others):
            wanted = field.expected if isinstance(field.expected, list) else [field.expected]
            firsts.append(
                (name, min(c.start for c in seen if any(_same(field, c.value, w) for w in wanted)))
            )
    if [n for n, _ in sorted(firsts, key=lambda f: f[1])] != [n for n, _ in firsts]:
        detail = (
            "fields of one type are named out of the declared order "
            f"({', '.join(n for n, _ in firsts)}): which value is which cannot be told"
        )
        return LooseVerdict(False, detail, tuple(found[:20]))
    return LooseVerdict(
        True, "every field exactly its expected value, with no rival", tuple(found[:20])
    )


def loose_verdict(
    check: AnswerCheck,
    text: str,
    others: Sequence[Any] = (),
    vocabulary: Vocabulary | None = None,
) -> LooseVerdict:
    """Whether a free-text answer commits to the expected value (see the module docstring).

    ``others``: values that are no rivals (the other fields of an object answer).
    ``vocabulary``: the words the answer may use besides its values (the task's words:
    :class:`~._vocabulary.Vocabulary`, which scoring always gives); without it (a reading
    with no task at hand) the words are not judged, only the values and the markers.
    """
    if not text.strip():
        return LooseVerdict(False, "no answer")
    if len(text) > MAX_LOOSE_CHARS:
        return LooseVerdict(False, f"{len(text)} characters: too long to be one answer")
    plain = normalise(text)
    kind = answer_kind(check.type)
    if kind == "text":
        return _short_text(check, plain)
    verdict = _object_verdict(check, plain) if kind == "object" else _verdict(check, plain, others)
    if not verdict.passed or vocabulary is None:
        return verdict
    known = vocabulary.with_answer(answer_words(check))
    unknown = unknown_words(plain, _value_spans(check, plain, others), known, raw=text)
    if unknown is not None:
        detail = (
            f"{unknown} is not a word a plain answer needs (fail closed: besides its value, "
            "a loose answer may use only the task's words and plain neutral ones)"
        )
        return LooseVerdict(False, detail, verdict.candidates)
    return verdict


def _value_spans(check: AnswerCheck, text: str, others: Sequence[Any]) -> list[tuple[int, int]]:
    """Where the parser read values of the answer's type (of each field, for an object)."""
    checks = (
        [answer_part(check, name) for name in check.type["properties"]]
        if answer_kind(check.type) == "object"
        else [check]
    )
    spans: list[tuple[int, int]] = []
    for one in checks:
        try:
            spans += [(c.start, c.end) for c in _scan(one, text, others)[0]]
        except (TimeoutError, regex.error):
            continue
    return spans


def _verdict(check: AnswerCheck, text: str, others: Sequence[Any]) -> LooseVerdict:
    kind = answer_kind(check.type)
    try:
        found, unreadable = _scan(check, text, others)
    except (TimeoutError, regex.error):
        return LooseVerdict(False, "the id pattern could not be matched in time")
    shown = tuple(sorted({str(c.value) for c in found}))[:20]
    if unreadable:
        whats = "; ".join(u.what for u in unreadable[:3])
        return LooseVerdict(False, f"cannot read (fail closed): {whats}", shown)
    if not found:
        return LooseVerdict(False, f"the answer names no {kind} value", shown)
    expected = check.expected if kind == "list" else [check.expected]
    rivals = [c for c in found if not any(_same(check, c.value, e) for e in [*expected, *others])]
    if rivals:
        named = ", ".join(str(r.value) for r in rivals[:5])
        return LooseVerdict(False, f"rival candidates of the answer's type: {named}", shown)
    missing = [e for e in expected if not any(_same(check, c.value, e) for c in found)]
    if missing:
        return LooseVerdict(False, f"the answer lacks {', '.join(map(str, missing[:5]))}", shown)
    mine = [c for c in found if any(_same(check, c.value, e) for e in expected)]
    if kind == "list":
        named_twice = _repeated(check, mine, expected)
        if named_twice is not None:
            return LooseVerdict(False, f"{named_twice} is named more than once in the list", shown)
        if check.comparison == "order":
            order = [
                next(e for e in expected if _same(check, c.value, e))
                for c in sorted(mine, key=lambda c: c.start)
            ]
            if order != list(expected):
                return LooseVerdict(False, "the values are named in another order", shown)
    doubt = DOUBT.search(text)
    if doubt is not None:
        detail = f"the answer doubts or takes back what it says ({doubt[0]!r}: hedged)"
        return LooseVerdict(False, detail, shown)
    sentences = Sentences(text)
    for spot in mine:
        currency = _currency(check, text, spot)
        if currency is not None:
            detail = f"{spot.value} is given in {currency}, the answer is in {check.unit}"
            return LooseVerdict(False, detail, shown)
        word = _taken_back(sentences, spot)
        if word is not None:
            return LooseVerdict(
                False, f"{spot.value} is negated, bounded or hedged ({word!r} with it)", shown
            )
    word = sentences.afterthought()
    if word is not None:
        return LooseVerdict(False, f"a fragment takes the value back ({word!r})", shown)
    return LooseVerdict(True, "exactly the expected value, with no rival", shown)


def _repeated(check: AnswerCheck, mine: list[Found], expected: Sequence[Any]) -> Any:
    """The first expected item named more than once (a list names each item once)."""
    for item in expected:
        spots = {(c.start, c.end) for c in mine if _same(check, c.value, item)}
        if len(spots) > 1:
            return item
    return None
