"""Unicode normalisation of a free-text answer before the loose reader parses it.

An answer can hide a value from a reader that looks for ASCII digits: ``4\u200b6``
(a zero-width space inside the digits), full-width digits (U+FF14 U+FF16), ``٤٦`` or
``४६`` (Arabic-Indic and Devanagari digits), ``Ⅳ`` (a Roman numeral character),
``½``, ``四十六``, ``4̶6̶`` (combining strike-through). :func:`normalise` makes every
one of them plain text the parser reads:

* format characters (Unicode category ``Cf``: zero-width spaces and joiners, bidi
  controls, the soft hyphen) are removed;
* a decimal digit of any script becomes its ASCII digit (``unicodedata.decimal``);
* any other character with a numeric value (``Ⅳ``, ``½``, ``②``, ``²``, ``四``, ``十``)
  becomes that value written in ASCII, set apart by spaces: a number of its own;
* NFKC folds the rest (full-width letters and punctuation, ligatures, no-break
  spaces), every dash (category ``Pd``) and the minus sign become ``-``, and the
  combining marks left over (strike-through, underline) are dropped.

The loose reader parses only the normalised text, so all positions refer to it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["normalise"]

_MINUS = {"\u2212", "\u2796", "\ufe63", "\uff0d"}


def _numeric(ch: str) -> str:
    value = unicodedata.numeric(ch)
    shown = str(int(value)) if float(value).is_integer() else repr(float(value))
    return f" {shown} "


def normalise(text: str) -> str:
    """The text with hidden, foreign and decorated numerals made plain (see the module)."""
    out: list[str] = []
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cf":
            continue
        if ch.isascii():
            out.append(ch)
        elif category == "Nd":
            out.append(str(unicodedata.decimal(ch)))
        elif unicodedata.numeric(ch, None) is not None:
            out.append(_numeric(ch))
        else:
            out.append(ch)
    folded = unicodedata.normalize("NFKC", "".join(out))
    chars = []
    for ch in folded:
        if ch.isascii():
            chars.append(ch)
            continue
        category = unicodedata.category(ch)
        if category == "Pd" or ch in _MINUS:
            chars.append("-")
        elif category == "Mn":
            continue
        elif category == "Zs":
            chars.append(" ")
        else:
            chars.append(ch)
    return "".join(chars)
