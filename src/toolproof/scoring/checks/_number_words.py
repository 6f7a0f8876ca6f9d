"""Numbers spelled out in words, read as candidates by the loose answer reader.

``46, or maybe forty-two`` names two numbers; a reader that saw only digits would
find one and pass it. This module finds English number words up to the thousands
(``forty-six``, ``forty six``, ``one hundred and five``, ``twelve thousand three
hundred``) and the single words for small numbers in German, Spanish, French,
Italian and Portuguese (``zwölf``, ``doce``, ``douze``...; compounds in those
languages are not parsed). A lone ``one`` is not read as a number: it is mostly a
pronoun (``the one I paid``); ``one hundred`` still is. Words that are also common
English words in other senses (``once``, ``sept``, ``cent``) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["number_words"]

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fourty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000}
_FOREIGN = {
    # German
    "null": 0,
    "zwei": 2,
    "drei": 3,
    "vier": 4,
    "fünf": 5,
    "sechs": 6,
    "sieben": 7,
    "acht": 8,
    "neun": 9,
    "zehn": 10,
    "elf": 11,
    "zwölf": 12,
    "zwanzig": 20,
    "dreißig": 30,
    "vierzig": 40,
    "fünfzig": 50,
    "hundert": 100,
    "tausend": 1000,
    # Spanish
    "dos": 2,
    "tres": 3,
    "cuatro": 4,
    "cinco": 5,
    "seis": 6,
    "siete": 7,
    "ocho": 8,
    "nueve": 9,
    "diez": 10,
    "doce": 12,
    "veinte": 20,
    "treinta": 30,
    "cuarenta": 40,
    "cincuenta": 50,
    "cien": 100,
    "mil": 1000,
    # French
    "deux": 2,
    "trois": 3,
    "quatre": 4,
    "cinq": 5,
    "huit": 8,
    "neuf": 9,
    "dix": 10,
    "onze": 11,
    "douze": 12,
    "vingt": 20,
    "trente": 30,
    "quarante": 40,
    "cinquante": 50,
    # Italian
    "quattro": 4,
    "cinque": 5,
    "sette": 7,
    "otto": 8,
    "nove": 9,
    "dieci": 10,
    "dodici": 12,
    "venti": 20,
    "trenta": 30,
    "quaranta": 40,
    "cinquanta": 50,
    # Portuguese
    "três": 3,
    "quatro": 4,
    "oito": 8,
    "dez": 10,
    "doze": 12,
    "vinte": 20,
}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_JOINERS = frozenset({"and", "-"})


def _english(words: list[str]) -> int | None:
    """The value of a run of English number words, or None if it is not one number."""
    total = 0
    current = 0
    seen_any = False
    for word in words:
        if word in _UNITS:
            if current % 10 or (current % 100 and current % 100 < 20):
                return None  # "five six" is two numbers, not one
            current += _UNITS[word]
        elif word in _TENS:
            if current % 100:
                return None
            current += _TENS[word]
        elif word == "hundred":
            if current >= 100:
                return None  # "two hundred hundred"
            current = max(current, 1) * 100
        elif word == "thousand":
            if total:
                return None
            total = max(current, 1) * 1000
            current = 0
        else:
            return None
        seen_any = True
    return total + current if seen_any else None


def number_words(text: str) -> Iterator[tuple[float, int, int]]:
    """Every number written in words in ``text``: ``(value, start, end)``.

    Runs of English number words (joined by spaces, hyphens or ``and``) are read as one
    number where they make one (``forty-six``, ``one hundred and five``); a run that is
    not one number (``five six``) is read word by word.
    """
    tokens = [(m[0].casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]
    i = 0
    while i < len(tokens):
        word, start, end = tokens[i]
        if word in _FOREIGN and word not in _UNITS:
            yield float(_FOREIGN[word]), start, end
            i += 1
            continue
        if word not in _UNITS and word not in _TENS and word not in _SCALES:
            i += 1
            continue
        run = [tokens[i]]
        j = i + 1
        while j < len(tokens):
            nxt, nstart, _ = tokens[j]
            gap = text[run[-1][2] : nstart]
            if gap.strip() not in ("", "-") or "\n" in gap:
                break
            if nxt in _UNITS or nxt in _TENS or nxt in _SCALES:
                run.append(tokens[j])
                j += 1
                continue
            if nxt == "and" and j + 1 < len(tokens):
                after = tokens[j + 1][0]
                if after in _UNITS or after in _TENS:
                    run.append(tokens[j])
                    j += 1
                    continue
            break
        words = [w for w, _, _ in run if w != "and"]
        value = _english(words)
        if value is not None:
            if words != ["one"]:
                yield float(value), run[0][1], run[-1][2]
        else:  # not one number: each word alone (a lone "one" is still skipped)
            for w, s, e in run:
                if w in _UNITS and w != "one":
                    yield float(_UNITS[w]), s, e
                elif w in _TENS:
                    yield float(_TENS[w]), s, e
        i = j
