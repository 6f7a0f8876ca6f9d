"""The loose reading of a free-text answer to a task with a typed answer.

``pass@strict`` needs the typed value handed in with ``submit_answer``. A final
answer in free text is read here for ``pass@loose`` only, by construction rather
than by guessing what the words commit to:

* every **candidate of the answer's type** is taken from the whole message (every
  number for a number answer, in digits or in words (``forty-two``: English up to the
  thousands, small numbers in a few other languages, :mod:`._number_words`), every
  date, every time, every option of the declared set, every match of an id
  pattern), whatever frame or language surrounds it, and whether or not the value
  came from a tool result;
* it passes only when **exactly one** candidate value appears (it may be repeated)
  and it is the expected one: any other candidate of the type is a rival;
* and **no negation or hedge** stands next to it (``not 46``, ``46 is wrong``,
  ``maybe 46``, ``no es 46``, ``nicht 46``).

So ``Total 46. Total 42.``, ``42 o quizás 46``, ``not 955.38 EUR``, an essay of
figures and an answer followed by a dump of the tool results all fail, and so does
``Booked at 09:00, 10:00 or 10:30``. A short string answer passes only when the
whole message is that string. An object answer (a name and a number) is read property by
property: each must be found exactly, with no rival of its own type.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from toolproof.spec.answer import AnswerCheck, answer_kind, item_schema
from toolproof.spec.answer import part as answer_part

from ._number_words import number_words
from ._text import numbers_in

_NEGATION = re.compile(
    r"(?<![\w])(?:not|no|never|none|neither|nor|isn't|aren't|wasn't|weren't|doesn't|don't|"
    r"didn't|cannot|can't|won't|wrong|incorrect|false|nicht|kein|keine|keinen|nie|niemals|"
    r"falsch|pas|non|jamais|ni|faux|nunca|jam[aá]s|tampoco|nada|ning[uú]n|ninguna|nem|"
    r"n[aã]o|nenhum|niet|geen|nooit|nie|mai|nessuno|невер\w*|не|нет|ні|nie)(?![\w])"
    r"|(?:不是|不|没有|没|非|無|无|ない|아니)",
    re.IGNORECASE,
)
"""Words that deny the value next to them, in the languages most often seen."""

_HEDGE = re.compile(
    r"(?<![\w])(?:maybe|perhaps|possibly|probably|either|alternatively|unsure|uncertain|"
    r"not\s+sure|not\s+certain|might\s+be|could\s+be|i\s+think|i\s+guess|roughly|about|"
    r"approximately|around|or|quiz[aá]s|tal\s+vez|acaso|o|vielleicht|eventuell|oder|"
    r"peut[-\s][eê]tre|ou|forse|oppure|talvez|misschien)(?![\w])"
    r"|(?:也许|或者|或|可能|たぶん|または)",
    re.IGNORECASE,
)
"""Words that offer the value as one possibility among others."""

_SENTENCE = re.compile(r"[.;!?\n]\s|[\n\u3002\uff01\uff1f]")  # and the CJK full stops
_BEFORE_WORDS = 6
_AFTER_WORDS = 3
_DATE_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_DMY = re.compile(rf"(?<!\w)(\d{{1,2}})\.?\s+({_MONTH})\.?,?\s+(\d{{4}})(?!\d)", re.I)
_DATE_MDY = re.compile(
    rf"(?<!\w)({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.I
)
_DATE_SLASH = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])")
_TIME = re.compile(
    r"(?<![\d:])([01]?\d|2[0-3])[:h]([0-5]\d)(?::[0-5]\d)?\s*(am|pm|a\.m\.|p\.m\.)?(?![\d:])", re.I
)
_TIME_AMPM = re.compile(r"(?<![\d:.])(1[0-2]|0?[1-9])\s*(am|pm|a\.m\.|p\.m\.)(?!\w)", re.I)
_PATTERN_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Candidate:
    """One value of the answer's type found in the text, and where."""

    value: Any
    start: int
    end: int


@dataclass(frozen=True)
class LooseVerdict:
    """The loose reading of one free-text answer."""

    passed: bool
    detail: str
    candidates: tuple[str, ...] = ()


def _valid_date(year: int, month: int, day: int) -> str | None:
    try:
        return _dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def _dates(text: str) -> Iterator[Candidate]:
    for m in _DATE_ISO.finditer(text):
        iso = _valid_date(int(m[1]), int(m[2]), int(m[3]))
        if iso:
            yield Candidate(iso, m.start(), m.end())
    for m in _DATE_DMY.finditer(text):
        iso = _valid_date(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))
        if iso:
            yield Candidate(iso, m.start(), m.end())
    for m in _DATE_MDY.finditer(text):
        iso = _valid_date(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
        if iso:
            yield Candidate(iso, m.start(), m.end())
    for m in _DATE_SLASH.finditer(text):  # ambiguous D/M or M/D: both readings are candidates
        for month, day in {(int(m[1]), int(m[2])), (int(m[2]), int(m[1]))}:
            iso = _valid_date(int(m[3]), month, day)
            if iso:
                yield Candidate(iso, m.start(), m.end())


def _hour(hour: int, suffix: str | None) -> int:
    if not suffix:
        return hour
    pm = suffix.lower().startswith("p")
    return (hour % 12) + (12 if pm else 0)


def _times(text: str) -> Iterator[Candidate]:
    seen: set[int] = set()
    for m in _TIME.finditer(text):
        seen.add(m.start())
        hour = _hour(int(m[1]), m[3])
        yield Candidate(f"{hour:02d}:{int(m[2]):02d}", m.start(), m.end())
    for m in _TIME_AMPM.finditer(text):
        if m.start() not in seen:
            yield Candidate(f"{_hour(int(m[1]), m[2]):02d}:00", m.start(), m.end())


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with these spans blanked (so the digits of a date are not numbers)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


_NUMBER_AT = re.compile(
    r"(?<![A-Za-z_\d.-])(?:-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+)(?![A-Za-z_\d])"
)


def _numbers(text: str) -> Iterator[Candidate]:
    spans = [(c.start, c.end) for c in (*_dates(text), *_times(text))]
    plain = _without(text, spans)
    for m in _NUMBER_AT.finditer(plain):
        values = numbers_in(m[0])
        if values:
            yield Candidate(values[0], m.start(), m.end())
    for value, start, end in number_words(plain):  # "forty-two" is a number too
        yield Candidate(value, start, end)


def _options(text: str, options: list[str], case_sensitive: bool) -> Iterator[Candidate]:
    flags = 0 if case_sensitive else re.IGNORECASE
    for option in sorted(options, key=len, reverse=True):
        word = re.escape(option.strip())
        for m in re.finditer(rf"(?<![\w-]){word}(?![\w]|-\w)", text, flags):
            yield Candidate(option, m.start(), m.end())


def _ids(text: str, pattern: str, case_sensitive: bool) -> Iterator[Candidate]:
    body = pattern.removeprefix("^").removesuffix("$")
    flags = 0 if case_sensitive else regex.IGNORECASE
    compiled = regex.compile(rf"(?<![\w-])(?:{body})(?![\w])", flags)
    for m in compiled.finditer(text, timeout=_PATTERN_TIMEOUT_S):
        yield Candidate(m[0], m.start(), m.end())


def candidates(check: AnswerCheck, text: str) -> list[Candidate]:
    """Every value of the answer's type in ``text`` (list answers: of the item type)."""
    schema = item_schema(check.type)
    kind = answer_kind(schema)
    if kind == "number":
        return list(_numbers(text))
    if kind == "date":
        return list(_dates(text))
    if kind == "time":
        return list(_times(text))
    if kind == "option":
        options = [str(v) for v in schema["enum"]]
        return list(_options(text, options, check.case_sensitive))
    if kind == "id":
        return list(_ids(text, str(schema["pattern"]), check.case_sensitive))
    return []


def _key(check: AnswerCheck, value: Any) -> Any:
    if isinstance(value, str) and not check.case_sensitive:
        return value.casefold()
    return value


def _matches(check: AnswerCheck, found: Any, expected: Any) -> bool:
    if isinstance(expected, int | float) and isinstance(found, int | float):
        return abs(float(found) - float(expected)) <= max(check.tolerance, 1e-9)
    return bool(_key(check, found) == _key(check, expected))


def _denied(text: str, spot: Candidate) -> str | None:
    """The negation or hedge next to this occurrence, if any (same sentence, nearby)."""
    start = 0
    for m in _SENTENCE.finditer(text, 0, spot.start):
        start = m.end()
    before = " ".join(text[start : spot.start].split()[-_BEFORE_WORDS:])
    end = len(text)
    found = _SENTENCE.search(text, spot.end)
    if found is not None:
        end = found.start()
    after = " ".join(text[spot.end : end].split()[:_AFTER_WORDS])
    for part in (before, after):
        for rule in (_NEGATION, _HEDGE):
            hit = rule.search(part)
            if hit is not None:
                return hit[0]
    return None


def _short_text(check: AnswerCheck, text: str) -> LooseVerdict:
    said = text.strip()
    for _ in range(3):  # quotes and a full stop around the value, in any order
        said = said.strip().strip("\"'`\u201c\u201d\u00ab\u00bb").rstrip(".!").strip()
    want = str(check.expected)
    if _key(check, " ".join(said.split())) == _key(check, " ".join(want.split())):
        return LooseVerdict(True, f"the answer is exactly {want!r}", (said,))
    return LooseVerdict(
        False, f"a short-text answer must be exactly the value; got {said[:80]!r}", (said[:80],)
    )


def _object_verdict(check: AnswerCheck, text: str) -> LooseVerdict:
    """An object answer: each property read on its own over the whole text, every one of
    them exactly its expected value with no rival of its type and no negation."""
    found: list[str] = []
    for name in check.type["properties"]:
        others = [  # another field's value is no rival of this one (latitude, longitude)
            v
            for k, value in check.expected.items()
            if k != name
            for v in (value if isinstance(value, list) else [value])
        ]
        verdict = loose_verdict(answer_part(check, name), text, others)
        found += [f"{name}={c}" for c in verdict.candidates]
        if not verdict.passed:
            return LooseVerdict(False, f"{name}: {verdict.detail}", tuple(found[:20]))
    return LooseVerdict(
        True, "every field exactly its expected value, with no rival", tuple(found[:20])
    )


def loose_verdict(check: AnswerCheck, text: str, others: Sequence[Any] = ()) -> LooseVerdict:
    """Whether a free-text answer commits to the expected value (see the module docstring).

    ``others``: values that are no rivals (the other fields of an object answer).
    """
    if not text.strip():
        return LooseVerdict(False, "no answer")
    kind = answer_kind(check.type)
    if kind == "text":
        return _short_text(check, text)
    if kind == "object":
        return _object_verdict(check, text)
    try:
        found = candidates(check, text)
    except TimeoutError:
        return LooseVerdict(False, "the id pattern could not be matched in time")
    shown = tuple(sorted({str(c.value) for c in found}))[:20]
    if not found:
        return LooseVerdict(False, f"the answer names no {kind} value", shown)
    expected = check.expected if kind == "list" else [check.expected]
    rivals = [
        c for c in found if not any(_matches(check, c.value, e) for e in [*expected, *others])
    ]
    if rivals:
        return LooseVerdict(
            False,
            f"rival candidates of the answer's type: {', '.join(str(r.value) for r in rivals[:5])}",
            shown,
        )
    missing = [e for e in expected if not any(_matches(check, c.value, e) for c in found)]
    if missing:
        return LooseVerdict(False, f"the answer lacks {', '.join(map(str, missing[:5]))}", shown)
    if kind == "list" and check.comparison == "order":
        firsts: list[Any] = []
        for c in sorted(found, key=lambda c: c.start):
            if not any(_matches(check, c.value, f) for f in firsts):
                firsts.append(c.value)
        if not all(_matches(check, f, e) for f, e in zip(firsts, expected, strict=False)):
            return LooseVerdict(False, "the values are named in another order", shown)
    for spot in found:
        word = _denied(text, spot)
        if word is not None:
            return LooseVerdict(
                False, f"{spot.value} is negated or hedged ({word!r} next to it)", shown
            )
    return LooseVerdict(True, "exactly the expected value, with no rival", shown)
