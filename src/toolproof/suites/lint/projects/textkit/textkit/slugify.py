"""URL slugs from titles."""

from __future__ import annotations

import unicodedata

from .tokenize import words

MAX_LENGTH = 60


def _ascii(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def slugify(title: str, *, max_length: int = MAX_LENGTH, separator: str = "-") -> str:
    """A lowercase ASCII slug, words joined by ``separator``, cut at a word boundary."""
    parts = words(_ascii(title).replace("'", ""))
    slug = ""
    for part in parts:
        candidate = f"{slug}{separator}{part}" if slug else part
        if len(candidate) > max_length:
            break
        slug = candidate
    return slug or "untitled"
