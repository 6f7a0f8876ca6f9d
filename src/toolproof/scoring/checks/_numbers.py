"""Every number written in digits in a (normalised) answer, in any notation known, and
every digit run that cannot be read as one number (fail closed).

The loose reader (:mod:`._loose`) passes a free-text answer only when it can tell
what every number in it says. A token is a maximal run starting with a digit
(``1,234.5``, ``4.6e1``, ``42k``, ``46th``, ``4O2``). It reads as:

* **grouping and decimals**: ``1,234.5`` and ``1.234,5`` (the last separator is the
  decimal one, the others group by three), ``1,234`` (a comma before three digits
  groups), ``1,5`` (a comma before other than three digits is decimal), ``1.234.567``,
  ``1'234``; any other mix (``1,23,456``, ``1.2.3``) cannot be read;
* **exponent and multiplier**: ``4.6e1`` is 46, ``42k`` is 42000;
* **suffix**: an ordinal (``46th``, ``4e``), the declared unit or a currency code
  (``12.5EUR``) leave the number as it is; any other letters glued to the digits
  (``46x``, ``4O2``, ``42m``) make it unreadable;
* **context**: a minus sign before it (not after a digit: ``42-46`` is two numbers),
  ``.5`` is 0.5; digits glued to letters before them (``CHK-1``, ``O1002``, ``x86``)
  belong to an id and are not a number, unless those letters look like digits
  (``l2``, ``o7``: unreadable).

Roman numerals in capitals (``XLII``) are numbers too (:func:`roman_numbers`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["NumberToken", "digit_numbers", "roman_numbers"]

_RUN = re.compile(r"\d(?:[\w.,'\u2019]|(?<=[eE])[-+](?=\d))*")
_SHAPE = re.compile(r"(?P<n>\d[\d.,'\u2019_]*)(?P<e>[eE][-+]?\d+)?(?P<s>[^\W\d_]*)")
_ORDINALS = frozenset({"st", "nd", "rd", "th", "e", "er", "eme", "ème", "o", "a", "º", "ª"})
_CURRENCIES = frozenset({"eur", "usd", "gbp", "chf", "jpy", "cad", "aud", "sek", "nok", "dkk"})
_MULTIPLIERS = {"k": 1_000.0}
_DIGIT_LOOKALIKES = frozenset("lo")  # a lowercase l or o before digits: l2, o7


@dataclass(frozen=True)
class NumberToken:
    """One run of digits: its value, or None when it cannot be read as one number."""

    value: float | None
    start: int
    end: int
    why: str = ""


def _grouped(groups: list[str]) -> bool:
    return 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


def _plain_number(body: str) -> float | None:
    """``1,234.5``, ``1.234,5``, ``1,5``, ``1'234``... as a number, or None (ambiguous)."""
    body = body.replace("'", ",").replace("\u2019", ",").replace("_", ",")
    commas, dots = body.count(","), body.count(".")
    if commas and dots:
        decimal = "." if body.rfind(".") > body.rfind(",") else ","
        group = "," if decimal == "." else "."
        whole, _, fraction = body.rpartition(decimal)
        if decimal in whole or not _grouped(whole.split(group)) or not fraction:
            return None
        return float(whole.replace(group, "") + "." + fraction)
    if commas:
        parts = body.split(",")
        if commas == 1 and len(parts[1]) != 3:
            return float(parts[0] + "." + parts[1]) if parts[1] else None
        return float("".join(parts)) if _grouped(parts) else None
    if dots > 1:
        parts = body.split(".")
        return float("".join(parts)) if _grouped(parts) else None
    return float(body)


def _suffix(letters: str, unit: str | None) -> float | str:
    """The factor a glued suffix applies (1: none), or why it makes the number unreadable."""
    plain = letters.casefold()
    if not plain or plain in _ORDINALS or plain in _CURRENCIES:
        return 1.0
    if unit is not None and plain == unit.casefold():
        return 1.0
    if plain in _MULTIPLIERS:
        return _MULTIPLIERS[plain]
    return f"letters {letters!r} glued to the digits"


def digit_numbers(text: str, unit: str | None = None) -> Iterator[NumberToken]:
    """Every run of digits in ``text`` (normalised), read as a number or as unreadable."""
    for m in _RUN.finditer(text):
        start, raw = m.start(), m[0].rstrip(".,'\u2019")
        end = start + len(raw)
        before = text[start - 1] if start else ""
        before2 = text[start - 2] if start > 1 else ""
        glued = before.isalpha() or before == "_" or (before in "-." and before2.isalpha())
        if glued:
            lead = start - (1 if before.isalpha() or before == "_" else 2)
            letters = ""
            while lead >= 0 and text[lead].isalpha():
                letters = text[lead] + letters
                lead -= 1
            if letters and len(letters) <= 2 and set(letters) <= _DIGIT_LOOKALIKES:
                why = f"{letters + raw!r} mixes digits and look-alikes"
                yield NumberToken(None, lead + 1, end, why)
            continue  # the digits of an id (CHK-1, O1002, x86)
        shape = _SHAPE.fullmatch(raw)
        if shape is None:
            yield NumberToken(None, start, end, f"{raw!r} mixes digits and letters")
            continue
        value = _plain_number(shape["n"])
        if value is None:
            yield NumberToken(None, start, end, f"{raw!r} has separators that read two ways")
            continue
        if shape["e"]:
            value *= 10.0 ** int(shape["e"][1:])
        factor = _suffix(shape["s"], unit)
        if isinstance(factor, str):
            yield NumberToken(None, start, end, f"{raw!r}: {factor}")
            continue
        if before == "." and not before2.isalnum():
            value = float("0." + shape["n"]) if shape["n"].isdigit() else value
            start -= 1
        if before == "-" and not before2.isalnum():
            value, start = -value, start - 1
        yield NumberToken(value * factor, start, end)


_ROMAN = re.compile(r"(?<![\w])[MDCLXVI]+(?![\w])")
_ROMAN_VALID = re.compile(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def roman_numbers(text: str) -> Iterator[NumberToken]:
    """Roman numerals in capitals (``XLII``, ``IV``, ``X``): a lone ``I`` is a pronoun, and
    a numeral character (``Ⅳ``) was already made digits by normalising. A lone ``V``,
    ``X``, ``L``, ``C``, ``D`` or ``M`` may be a numeral or a letter (``plan B``, size
    ``M``): it comes back unreadable (value None)."""
    for m in _ROMAN.finditer(text):
        if m[0] == "I" or not _ROMAN_VALID.fullmatch(m[0]):
            continue
        if len(m[0]) == 1:
            yield NumberToken(None, m.start(), m.end(), f"{m[0]!r} may be a Roman numeral")
            continue
        values = [_ROMAN_VALUES[ch] for ch in m[0]]
        total = sum(
            -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
        )
        yield NumberToken(float(total), m.start(), m.end())
