"""Numbers spelled out in words, read as candidates by the loose answer reader.

``46, or maybe forty-two`` names two numbers; a reader that saw only digits would
find one and pass it. This module reads number words in English (up to the
billions: ``forty-six``, ``one hundred and five``, ``twelve thousand three hundred``),
German, Dutch, French, Spanish, Italian, Portuguese and Russian, compounds included
(``zweiundvierzig``, ``tweeënveertig``, ``quarante-deux``, ``quatre-vingt-dix-sept``,
``cuarenta y dos``, ``doscientos``, ``quarantadue``, ``сорок два``): a word is a number
when it is made of number morphemes alone (and joiners such as ``und`` between
them), and a run of such words is one number where it reads as one. A lone word that
is mostly something else is not read (``due``); one that may be a number or another
word (``one``, ``once``, articles ``un``, ``ein``; ``Sept``, ``elf``) is reported as
unsure; inside a longer number both are read.
"""

from __future__ import annotations

import re
import unicodedata
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
_FOREIGN: dict[str, int] = {
    # German (casefolded: ß is ss)
    "null": 0, "eins": 1, "ein": 1, "eine": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5,
    "funf": 5, "sechs": 6, "sech": 6, "sieben": 7, "sieb": 7, "acht": 8, "neun": 9,
    "zehn": 10, "elf": 11, "zwölf": 12, "zwolf": 12, "zwanzig": 20, "dreissig": 30,
    "vierzig": 40, "fünfzig": 50, "funfzig": 50, "sechzig": 60, "siebzig": 70,
    "achtzig": 80, "neunzig": 90, "hundert": 100, "tausend": 1000, "million": 10**6,
    "millionen": 10**6,
    # Dutch
    "een": 1, "twee": 2, "drie": 3, "vijf": 5, "zes": 6, "zeven": 7, "negen": 9,
    "tien": 10, "twaalf": 12, "der": 3, "veer": 4, "twintig": 20, "dertig": 30,
    "veertig": 40, "vijftig": 50, "zestig": 60, "zeventig": 70, "tachtig": 80,
    "negentig": 90, "honderd": 100, "duizend": 1000, "miljoen": 10**6,
    # Spanish
    "cero": 0, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
    "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "trece": 13,
    "catorce": 14, "quince": 15, "dieci": 10, "veinte": 20, "veinti": 20, "treinta": 30,
    "cuarenta": 40, "cincuenta": 50, "sesenta": 60, "setenta": 70, "ochenta": 80,
    "noventa": 90, "cien": 100, "ciento": 100, "cientos": 100, "quinientos": 500,
    "mil": 1000, "millon": 10**6, "millón": 10**6, "millones": 10**6,
    # French
    "zéro": 0, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5,
    "sept": 7, "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "treize": 13,
    "quatorze": 14, "quinze": 15, "seize": 16, "vingt": 20, "vingts": 20, "trente": 30,
    "quarante": 40, "cinquante": 50, "soixante": 60, "quatrevingt": 80,
    "quatrevingts": 80, "cent": 100, "cents": 100, "mille": 1000, "millions": 10**6,
    # Italian
    "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sei": 6, "sette": 7, "otto": 8,
    "nove": 9, "undici": 11, "dodici": 12, "tredici": 13,
    "quattordici": 14, "quindici": 15, "sedici": 16, "diciassette": 17, "diciotto": 18,
    "diciannove": 19, "venti": 20, "vent": 20, "trenta": 30, "trent": 30,
    "quaranta": 40, "quarant": 40, "cinquanta": 50, "cinquant": 50, "sessanta": 60,
    "sessant": 60, "settanta": 70, "settant": 70, "ottanta": 80, "ottant": 80,
    "novanta": 90, "novant": 90, "cento": 100, "mila": 1000, "milione": 10**6,
    # Portuguese
    "um": 1, "uma": 1, "dois": 2, "duas": 2, "três": 3, "sete": 7, "oito": 8, "dez": 10,
    "treze": 13, "dezesseis": 16, "dezessete": 17, "dezoito": 18,
    "dezenove": 19, "vinte": 20, "trinta": 30, "quarenta": 40, "cinquenta": 50,
    "sessenta": 60, "oitenta": 80, "cem": 100, "milhão": 10**6, "milhões": 10**6,
    # Russian
    "ноль": 0, "один": 1, "одна": 1, "два": 2, "две": 2, "три": 3, "четыре": 4,
    "пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9, "десять": 10,
    "двадцать": 20, "тридцать": 30, "сорок": 40, "пятьдесят": 50, "шестьдесят": 60,
    "семьдесят": 70, "восемьдесят": 80, "девяносто": 90, "сто": 100, "тысяча": 1000,
    "тысяч": 1000,
}  # fmt: skip
"""Number morphemes of other languages (a word may be several: ``zweiundvierzig``)."""

_JOINERS_IN = ("und", "en", "ën", "y", "e", "et", "i")
"""What joins two number morphemes inside one word or between two words."""

_NEVER_ALONE = frozenset(
    {
        "due", "der", "veer", "sech", "sieb", "vent", "veinti", "i", "e", "y", "en", "et",
        "und",
    }
)  # fmt: skip
"""Read only inside a longer number: parts of words (``der`` in ``dertig``, ``vent`` in
``ventotto``), joiners, and ``due`` (the amount due is an English phrase, not a 2)."""

_UNSURE_ALONE = frozenset(
    {
        "one", "once", "ein", "eine", "een", "un", "une", "uno", "una", "um", "uma", "sei",
        "otto", "sept",
        "cent", "cents", "elf", "null", "mil", "mila", "seize", "dos", "tre", "mille", "dez",
        "dieci",
    }
)  # fmt: skip
"""Alone, maybe a number and maybe another word (``one`` as a pronoun, ``once``, an
article, ``Sept``, ``elf``): the reader cannot tell, so a lone one is reported as such
(``number_words(..., unsure)``) and the loose reader fails closed on it."""

_ENGLISH: dict[str, int] = {
    **_UNITS,
    **_TENS,
    "hundred": 100,
    "thousand": 1000,
    "million": 10**6,
    "billion": 10**9,
}


def _plain(word: str) -> str:
    """Casefolded, accents dropped (``zwölf`` and ``zwolf``, ``três`` and ``tres``)."""
    decomposed = unicodedata.normalize("NFD", word.casefold())
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")


_LEXICON: dict[str, int] = {_plain(k): v for k, v in {**_FOREIGN, **_ENGLISH}.items()}
_JOINS = frozenset(_plain(j) for j in _JOINERS_IN) | {"and"}
_NEVER = frozenset(_plain(w) for w in _NEVER_ALONE)
_UNSURE = frozenset(_plain(w) for w in _UNSURE_ALONE)
_LONGEST = max(map(len, _LEXICON))
_MAX_WORD = 48
_TOKEN = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*", re.UNICODE)


def _segment(word: str) -> list[int] | None:
    """The number morphemes a whole word is made of (``zweiundvierzig``: 2, 40), or None
    when it is not made of them alone. Joiners (``und``, ``y``, ``et``) only stand
    between two morphemes; the longest morpheme is tried first."""
    if not word or len(word) > _MAX_WORD:
        return None
    memo: dict[tuple[int, bool], list[int] | None] = {}

    def walk(at: int, after_value: bool) -> list[int] | None:
        if at == len(word):
            return [] if after_value else None
        key = (at, after_value)
        if key in memo:
            return memo[key]
        found: list[int] | None = None
        for size in range(min(_LONGEST, len(word) - at), 0, -1):
            piece = word[at : at + size]
            if piece in _LEXICON:
                rest = walk(at + size, True)
                if rest is not None:
                    found = [_LEXICON[piece], *rest]
                    break
            if after_value and piece in _JOINS:
                rest = walk(at + size, False)
                if rest:  # a joiner needs a morpheme after it
                    found = rest
                    break
        memo[key] = found
        return found

    return walk(0, False)


def _joins(last: int, value: int) -> bool:
    """Whether ``value`` continues the number whose last small part is ``last``: tens and
    a unit (``forty-two``, German ``zweiundvierzig``), ten and a unit (``dix-sept``),
    sixty or eighty and a teen or ten (``soixante-quinze``, ``quatre-vingt-dix``)."""
    if last >= 20 and last % 10 == 0 and value < 10:
        return True
    if last < 10 and 20 <= value < 100 and value % 10 == 0:
        return True
    if last == 10 and value < 10:
        return True
    return last in (60, 80) and 10 <= value < 20


def _numbers_of(values: list[int]) -> list[int]:
    """The numbers a run of morphemes makes: one where it reads as one (``one hundred and
    five``), several where it does not (``five six``, ``nineteen eighty``)."""
    out: list[int] = []
    total = current = 0
    last: int | None = None
    for value in values:
        if value == 100:
            current = max(current, 1) * 100
            last = None
        elif value >= 1000:
            total += max(current, 1) * value
            current, last = 0, None
        elif last is not None and not _joins(last, value):
            out.append(total + current)
            total, current, last = 0, value, value
        else:
            current += value
            last = value
    if values:
        out.append(total + current)
    return out


def _words(text: str) -> list[tuple[str, list[int] | None, int, int]]:
    """Each word (hyphenated compounds as one) with its number morphemes, or None."""
    out = []
    for m in _TOKEN.finditer(text):
        word = _plain(m[0])
        values = _segment(word.replace("-", ""))
        if values is None and "-" in word:  # "forty-two" yes, "well-known" no: part by part
            offset = m.start()
            for part in m[0].split("-"):
                plain = _plain(part)
                out.append((plain, _segment(plain), offset, offset + len(part)))
                offset += len(part) + 1
            continue
        out.append((word, values, m.start(), m.end()))
    return out


def _blank(gap: str) -> bool:
    return not gap.strip() and "\n" not in gap


def number_words(text: str, unsure: list[str] | None = None) -> Iterator[tuple[float, int, int]]:
    """Every number written in words in ``text``: ``(value, start, end)``.

    Runs of number words (joined by spaces, hyphens or ``and``, ``y``, ``e``, ``et``,
    ``und``) are read as one number where they make one (``forty-six``, ``one hundred
    and five``, ``quarante-deux``, ``cuarenta y dos``, ``zweiundvierzig``, ``vingt-et-un``),
    else as several. A lone word that is mostly something else (``one``, ``due``) is not
    read; a lone word that may or may not be a number (``un``, ``Sept``, ``elf``) is not
    read either, and is appended to ``unsure`` when given (the loose reader fails closed
    on it).
    """
    words = _words(text)
    i = 0
    while i < len(words):
        word, values, start, end = words[i]
        if values is None:
            i += 1
            continue
        run, names, last_end, j = list(values), [word], end, i + 1
        while j < len(words):
            nxt, more, nstart, nend = words[j]
            if not _blank(text[last_end:nstart].replace("-", " ")):
                break
            if more is not None:
                run += more
                names.append(nxt)
                last_end, j = nend, j + 1
                continue
            joined = nxt in _JOINS and j + 1 < len(words) and words[j + 1][1] is not None
            if joined and _blank(text[nend : words[j + 1][2]].replace("-", " ")):
                last_end, j = nend, j + 1
                continue
            break
        if len(names) == 1 and word in _NEVER:
            pass
        elif len(names) == 1 and word in _UNSURE:
            if unsure is not None:
                unsure.append(text[start:last_end])
        else:
            for value in _numbers_of(run):
                yield float(value), start, last_end
        i = j
