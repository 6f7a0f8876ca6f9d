"""Splitting text into words and sentences."""

from __future__ import annotations

import re

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['-][A-Za-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace into single spaces and trim the ends."""
    return _SPACE.sub(" ", text).strip()


def words(text: str, *, lower: bool = True) -> list[str]:
    """The words of ``text``, hyphenated words and contractions kept whole."""
    found = _WORD.findall(text)
    return [w.lower() for w in found] if lower else found


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences at ., ! or ? followed by a capital or a digit."""
    cleaned = normalize_space(text)
    if not cleaned:
        return []
    return [part.strip() for part in _SENTENCE_END.split(cleaned) if part.strip()]
