"""Evasive free-text answers no rule lists, generated (issue 31): the loose reader's attacker.

A value of an answer's type is written in many notations (:func:`notations`): digits
with either grouping, an exponent, full-width, Arabic-Indic and Devanagari digits,
a zero-width space inside, number words in English, German, French and Spanish, a
Roman numeral character, a currency sign; a date as ISO, with a month name in
several languages, dotted, slashed or without its year; a time in 12 or 24 hours or
``10h30``; an id or option in another case or spacing. The right value is then set
with rivals in frames (:data:`WITH_RIVAL`: ranges, intervals, retractions,
conditionals, tables, JSON, code, another question) or alone in a frame that takes
it back (:data:`TAKEN_BACK`: bounds, approximations, questions, negations in
several languages, doubt). The honest control writes the value alone in a plain
sentence (:data:`PLAIN`).

The tests' own spellings, independent of the reader under test.
"""

# ruff: noqa: RUF001, RUF003  (look-alike digits and dashes are the attack under test)

from __future__ import annotations

import datetime as dt
from typing import Any

from toolproof.spec import AnswerCheck

_SMALL = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_DE_UNITS = ["null", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun"]
_DE_TEENS = "zehn elf zwölf dreizehn vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn"
_DE_TENS = ["", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig"]
_DE_TENS += ["achtzig", "neunzig"]
_FR_SMALL = [
    "zéro",
    "un",
    "deux",
    "trois",
    "quatre",
    "cinq",
    "six",
    "sept",
    "huit",
    "neuf",
    "dix",
    "onze",
    "douze",
    "treize",
    "quatorze",
    "quinze",
    "seize",
    "dix-sept",
    "dix-huit",
    "dix-neuf",
]
_FR_TENS = ["", "", "vingt", "trente", "quarante", "cinquante", "soixante"]
_ES_SMALL = [
    "cero",
    "uno",
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "once",
    "doce",
    "trece",
    "catorce",
    "quince",
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
]
_ES_TENS = ["", "", "veinte", "treinta", "cuarenta", "cincuenta", "sesenta", "setenta"]
_ES_TENS += ["ochenta", "noventa"]
_MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August"]
_MONTHS_EN += ["September", "October", "November", "December"]
_MONTHS_DE = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August"]
_MONTHS_DE += ["September", "Oktober", "November", "Dezember"]
_MONTHS_ES = ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto"]
_MONTHS_ES += ["septiembre", "octubre", "noviembre", "diciembre"]


def english(n: int) -> str:
    """0 <= n < 1,000,000 in English words."""
    if n < 20:
        return _SMALL[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (f"-{_SMALL[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_SMALL[hundreds]} hundred" + (f" and {english(rest)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    return f"{english(thousands)} thousand" + (f" {english(rest)}" if rest else "")


def german(n: int) -> str | None:
    """0 <= n < 100 in German words (``zweiundvierzig``)."""
    if n < 10:
        return _DE_UNITS[n]
    if n < 20:
        return _DE_TEENS.split()[n - 10]
    if n < 100:
        tens, ones = divmod(n, 10)
        unit = "ein" if ones == 1 else _DE_UNITS[ones]
        return (f"{unit}und" if ones else "") + _DE_TENS[tens]
    return None


def french(n: int) -> str | None:
    """0 <= n < 70 in French words (``quarante-deux``, ``vingt-et-un``)."""
    if n < 20:
        return _FR_SMALL[n]
    if n < 70:
        tens, ones = divmod(n, 10)
        if not ones:
            return _FR_TENS[tens]
        return _FR_TENS[tens] + ("-et-un" if ones == 1 else f"-{_FR_SMALL[ones]}")
    return None


def spanish(n: int) -> str | None:
    """0 <= n < 100 in Spanish words (``cuarenta y dos``), 20-29 as ``veinte y N``."""
    if n < 20:
        return _ES_SMALL[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _ES_TENS[tens] + (f" y {_ES_SMALL[ones]}" if ones else "")
    return None


def roman(n: int) -> str:
    """1 <= n < 4000 in Roman numerals (``XLII``)."""
    out = ""
    for value, letters in (
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ):  # fmt: skip
        while n >= value:
            out, n = out + letters, n - value
    return out


def _digits(text: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in text)


def number_notations(value: float) -> list[str]:
    """Ways to write this number that a reader takes for it (never for another number)."""
    whole = float(value).is_integer()
    plain = str(int(value)) if whole else f"{value:g}" if abs(value) < 1e6 else str(value)
    out = [plain, f"{value:.6e}".replace("e+0", "e").replace("e+", "e")]
    out += [_digits(plain, 0xFF10), _digits(plain, 0x0660), _digits(plain, 0x0966)]
    if len(plain) > 1:
        out.append(plain[0] + "\u200b" + plain[1:])
    if abs(value) >= 1000:
        grouped = f"{value:,.2f}"
        out += [grouped, grouped.replace(",", "_").replace(".", ",").replace("_", ".")]
    out += [f"${plain}", f"€{plain}", f"{plain} USD"]
    if whole and 0 <= value < 1_000_000:
        n = int(value)
        out.append(english(n))
        out += [w for w in (german(n), french(n), spanish(n)) if w is not None]
        if 2 <= n < 4000:
            out.append(roman(n))
        if 1 <= n <= 12:
            out.append(chr(0x215F + n))  # Ⅰ..Ⅻ
        if n and n % 1000 == 0:
            out.append(f"{n // 1000}k")
    return out


def date_notations(iso: str) -> list[str]:
    """Ways to write this date, some of them ambiguous or without the year."""
    day = dt.date.fromisoformat(iso)
    d, m, y = day.day, day.month, day.year
    return [
        iso,
        f"{d} {_MONTHS_EN[m - 1]} {y}",
        f"{_MONTHS_EN[m - 1]} {d}, {y}",
        f"{d}. {_MONTHS_DE[m - 1]} {y}",
        f"{d} de {_MONTHS_ES[m - 1]} de {y}",
        f"{d:02d}.{m:02d}.{y}",
        f"{m:02d}/{d:02d}/{y}",
        f"{d} {_MONTHS_EN[m - 1][:3]}",
        f"{m:02d}/{d:02d}",
    ]


def time_notations(hhmm: str) -> list[str]:
    """Ways to write this time of day."""
    hour, minute = map(int, hhmm.split(":"))
    twelve = f"{(hour % 12) or 12}:{minute:02d} {'pm' if hour >= 12 else 'am'}"
    out = [hhmm, twelve, f"{hour}h{minute:02d}", f"{hour}.{minute:02d}"]
    if minute == 0:
        out.append(f"{(hour % 12) or 12} {'pm' if hour >= 12 else 'am'}")
    return out


def string_notations(value: str) -> list[str]:
    """An id or option in another case and spacing."""
    out = [value, value.lower(), value.upper()]
    for sep in ("-", "_"):
        if sep in value:
            out += [value.replace(sep, " "), value.replace(sep, "")]
    return out


def notations(schema: dict[str, Any], value: Any) -> list[str]:
    """Ways to write one scalar value of this schema."""
    if schema.get("type") in ("number", "integer"):
        return number_notations(float(value))
    if schema.get("format") == "date":
        return date_notations(str(value))
    if schema.get("format") == "time":
        return time_notations(str(value))
    return string_notations(str(value))


def said(value: Any) -> str:
    """A value as an honest answer writes it (12, not 12.0; a list joined)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(said(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(said(v) for v in value.values())
    return str(value)


PLAIN = [
    "{v}",
    "{v}.",
    "The answer is {v}.",
    "Answer: {v}",
    "I checked: it is {v}.",
    "Result: **{v}**",
    "`{v}`",
    "{v}\n\nLet me know if you need anything else.",
]
"""Honest phrasings of exactly the value: the control, which must pass loose."""

WITH_RIVAL = [
    "{e}-{r}",
    "{e}–{r}",
    "{e} — {r}",
    "between {e} and {r}",
    "{e}/{r}",
    "{e}|{r}",
    "{e} ({r}?)",
    "{e}; {r}",
    "{e}\n{r}",
    "If the fee applies, {r}; otherwise {e}.",
    "~~{r}~~ {e}",
    "{r}, I mean {e}",
    "{r}. Scratch that: {e}.",
    "Es {e}. Es {r}.",
    "| item | value |\n|---|---|\n| a | {e} |\n| b | {r} |",
    '{{"answer": "{e}", "alt": "{r}"}}',
    "```\n{r}\n```\nSo: {e}.",
    "The answer is {e}. The other account holds {r}.",
    "{e} (previously {r})",
    "{e}, {r}",
    "Total {e}. Total {r}.",
    "{e} o {r}",
    "{e} oder {r}",
    "{e} ou {r}",
]
"""Frames that set the right value ``e`` with a rival ``r``: every one must fail."""

TAKEN_BACK = [
    "~{e}",
    "≈{e}",
    "about {e}",
    "at least {e}",
    "at most {e}",
    "≤ {e}",
    "> {e}",
    "{e}+",
    "{e}±1",
    "Is it {e}?",
    "{e}?",
    "Perhaps {e}.",
    "{e}, I think.",
    "{e}. Not sure though.",
    "not {e}",
    "It is not {e}.",
    "No es {e}.",
    "Ce n'est pas {e}.",
    "Es ist nicht {e}.",
    "Non è {e}.",
    "{e} is wrong.",
    "{e}. Scratch that.",
    "{e} — never mind.",
    "If the fee applies, {e}.",
    "The other account holds {e}.",
    "{e} would be my guess.",
    "Quizás {e}.",
    "Vielleicht {e}.",
    "Peut-être {e}.",
    "Before {e}.",
    "¿{e}?",
    "{e} (rounded)",
    "{e}, allegedly",
    "{e} (unconfirmed)",
    "大约{e}",
    "約{e}くらい",
    "{e}*\n\n*unless the fee applies",
    "{e}ish",
    "{e}†",
    "حوالي {e}",
    "The total is {e}. Or not.",
    "No. {e}.",
    "{e}. Or less.",
    "{e}.\nNot.",
    "{e}, last I checked.",
    "north of {e}",
    "{e}, per item.",
    "{e} (net)",
    "{e}, subject to change.",
    "The answer is {e}, ~.",
]
"""Frames that take back the right value ``e`` with no rival: every one must fail."""


def scalar_rival(check: AnswerCheck, schema: dict[str, Any], value: Any, n: int) -> Any:
    """A value of the same scalar type, never equal to ``value`` (as compared)."""
    if "enum" in schema:
        others = [o for o in schema["enum"] if str(o).casefold() != str(value).casefold()]
        return others[n % len(others)]
    if schema.get("format") == "date":
        return (dt.date.fromisoformat(value) + dt.timedelta(days=n + 1)).isoformat()
    if schema.get("format") == "time":
        hour, minute = map(int, value.split(":"))
        total = (hour * 60 + minute + 30 * (n + 1)) % (24 * 60)
        return f"{total // 60:02d}:{total % 60:02d}"
    if schema.get("type") in ("number", "integer"):
        step = max(1.0, check.tolerance * 10, round(abs(float(value)) * 0.1))
        rival = float(value) + step * (n + 1) * (-1 if n % 2 else 1)
        return int(rival) if schema.get("type") == "integer" or rival.is_integer() else rival
    text = str(value)
    last = text[-1]
    if last.isdigit():
        return text[:-1] + str((int(last) + n + 1) % 10)
    return text + "X"
