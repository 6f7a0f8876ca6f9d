"""Dates and times in a (normalised) free-text answer, for the loose reader.

Dates: ISO (``2026-03-05``, ``2026/03/05``), a day and a month name and a year in
English, German, French, Spanish, Italian, Portuguese or Dutch (``5 March 2026``,
``March 5th, 2026``, ``5. März 2026``, ``5 de marzo de 2026``), the German dotted
form (``05.03.2026``), and ``05/03/2026``, which reads two ways (5 March or 3 May):
both readings are candidates, so one of them is a rival unless they agree. A date
without its year (``5 March``, ``05/03``) is not a date here: the loose reader of a
date answer refuses any number or month name left over once the dates are read.

Times: ``10:30``, ``10h30``, ``10:30:00``, ``10:30 pm``, ``10 am``, and the words for
noon and midnight.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Found", "dates", "month_words", "times"]


@dataclass(frozen=True)
class Found:
    """One value of the answer's type found in the text, and where."""

    value: Any
    start: int
    end: int


_MONTH_NAMES = [
    "january jan januar janvier enero gennaio janeiro januari jänner",
    "february feb februar février fevrier febrero febbraio fevereiro februari",
    "march mar märz marz mars marzo março marco maart",
    "april apr avril abril aprile",
    "may mai mayo maggio maio mei",
    "june jun juni juin junio giugno junho",
    "july jul juli juillet julio luglio julho",
    "august aug août aout agosto augustus",
    "september sep sept septembre septiembre settembre setembro",
    "october oct oktober octobre octubre ottobre outubro",
    "november nov novembre noviembre novembro",
    "december dec dezember décembre decembre diciembre dicembre dezembro",
]
_MONTHS = {name: i for i, names in enumerate(_MONTH_NAMES, start=1) for name in names.split()}
_MONTH = "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th|er|º|\.)?"
_ISO = re.compile(r"(?<![\d/.-])(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?![\d/-])")
_DMY = re.compile(
    rf"(?<![\w.])(\d{{1,2}}){_ORD}\s+(?:of\s+|de\s+)?({_MONTH})\.?,?\s+(?:de\s+)?(\d{{4}})(?!\d)",
    re.IGNORECASE,
)
_MDY = re.compile(rf"(?<!\w)({_MONTH})\.?\s+(\d{{1,2}}){_ORD},?\s+(\d{{4}})(?!\d)", re.IGNORECASE)
_DOTTED = re.compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d])")
_SLASHED = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])")
_MONTH_WORD = re.compile(rf"(?<![\w])(?:{_MONTH})(?![\w])", re.IGNORECASE)

_TIME = re.compile(
    r"(?<![\d:.])([01]?\d|2[0-3])[:h]([0-5]\d)(?::[0-5]\d)?"
    r"(?:[ \t]*(am|pm|a\.m\.|p\.m\.))?(?![\d:])",
    re.IGNORECASE,
)
_TIME_AMPM = re.compile(r"(?<![\d:.])(1[0-2]|0?[1-9])[ \t]*(am|pm|a\.m\.|p\.m\.)(?!\w)", re.I)
_NAMED_TIMES = re.compile(
    r"(?<![\w])(noon|midday|midnight|mediod[ií]a|medianoche|midi|minuit|mittag|"
    r"mitternacht|mezzogiorno|mezzanotte|meio-dia|meia-noite)(?![\w])",
    re.IGNORECASE,
)
_MIDNIGHT = ("midnight", "medianoche", "minuit", "mitternacht", "mezzanotte", "meia-noite")


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return _dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def dates(text: str) -> Iterator[Found]:
    """Every full date in ``text`` (see the module), as ``YYYY-MM-DD``."""
    for m in _ISO.finditer(text):
        if iso := _iso(int(m[1]), int(m[3]), int(m[4])):
            yield Found(iso, m.start(), m.end())
    for m in _DMY.finditer(text):
        if iso := _iso(int(m[3]), _MONTHS[m[2].lower()], int(m[1])):
            yield Found(iso, m.start(), m.end())
    for m in _MDY.finditer(text):
        if iso := _iso(int(m[3]), _MONTHS[m[1].lower()], int(m[2])):
            yield Found(iso, m.start(), m.end())
    for m in _DOTTED.finditer(text):
        if iso := _iso(int(m[3]), int(m[2]), int(m[1])):
            yield Found(iso, m.start(), m.end())
    for m in _SLASHED.finditer(text):  # D/M or M/D: both readings are candidates
        for month, day in {(int(m[1]), int(m[2])), (int(m[2]), int(m[1]))}:
            if iso := _iso(int(m[3]), month, day):
                yield Found(iso, m.start(), m.end())


def month_words(text: str) -> Iterator[Found]:
    """Every month name (``March``, ``März``, ``Dec``), whether or not in a date."""
    for m in _MONTH_WORD.finditer(text):
        yield Found(_MONTHS[m[0].lower()], m.start(), m.end())


def _hour(hour: int, suffix: str | None) -> int:
    if not suffix:
        return hour
    return (hour % 12) + (12 if suffix.lower().startswith("p") else 0)


def times(text: str) -> Iterator[Found]:
    """Every time of day in ``text``, as ``HH:MM`` (24 hours)."""
    seen: set[int] = set()
    for m in _TIME.finditer(text):
        seen.add(m.start())
        hour = _hour(int(m[1]), m[3])
        yield Found(f"{hour:02d}:{int(m[2]):02d}", m.start(), m.end())
    for m in _TIME_AMPM.finditer(text):
        if m.start() not in seen:
            yield Found(f"{_hour(int(m[1]), m[2]):02d}:00", m.start(), m.end())
    for m in _NAMED_TIMES.finditer(text):
        yield Found("00:00" if m[1].lower() in _MIDNIGHT else "12:00", m.start(), m.end())
