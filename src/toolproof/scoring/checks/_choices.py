"""Options of an enum and ids of a pattern, found in a (normalised) free-text answer.

An option is found whatever its case and spacing (``sav 1``, ``SAV_1`` and ``sav1`` are
``SAV-1``); an id is found where the task's pattern matches, and also where its
letters and digits alone are spaced or joined otherwise (``O 1003``, ``B2103`` for
``B2-103``), so a rival cannot hide in another spelling. The author's pattern is
matched with a timeout against the agent's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import regex

from ._datetimes import Found

__all__ = ["ids", "options", "skeleton"]

_PATTERN_TIMEOUT_S = 1.0
_MAX_CHUNKS = 4000
_SEPARATORS = r"[\s\-_./]*"
_CHUNK = re.compile(r"[^\W_]+")


def _option_pattern(option: str) -> str:
    """An option with spaces, dashes, dots and underscores optional between its letters
    and digits (``SAV-1``: ``sav1``, ``SAV 1``, ``sav_1``); other signs stay (``@``)."""
    parts: list[str] = []
    for ch in option.strip():
        if ch.isalnum():
            if parts and parts[-1] != _SEPARATORS:
                parts.append(_SEPARATORS)
            parts.append(re.escape(ch))
        elif ch in " -_./":
            if parts and parts[-1] != _SEPARATORS:
                parts.append(_SEPARATORS)
        else:
            if parts and parts[-1] == _SEPARATORS:
                parts.pop()
            parts.append(re.escape(ch))
    while parts and parts[-1] == _SEPARATORS:
        parts.pop()
    return "".join(parts) or re.escape(option)


def options(text: str, options: list[str], case_sensitive: bool) -> Iterator[Found]:
    flags = 0 if case_sensitive else re.IGNORECASE
    taken: list[tuple[int, int]] = []
    for option in sorted(options, key=len, reverse=True):
        body = _option_pattern(option)
        for m in re.finditer(rf"(?<![^\W_]){body}(?![^\W_])", text, flags):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue  # inside a longer option already found
            taken.append((m.start(), m.end()))
            yield Found(option, m.start(), m.end())


def _compact_pattern(pattern: str) -> str:
    """The id pattern with its literal separators (``-``, ``_``, space, ``\\.``) taken out
    of it (not out of its character classes): what the id's letters and digits alone
    look like (``[A-Z]\\d-\\d{3}``: ``[A-Z]\\d\\d{3}``)."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            if depth or pair not in ("\\-", "\\_", "\\ ", "\\."):
                out.append(pair)
            i += 2
            continue
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        if depth or ch not in "-_ ":
            out.append(ch)
        i += 1
    return "".join(out)


def skeleton(value: str) -> str:
    """An id's letters and digits alone, casefolded (``B2-103``, ``b2 103``: ``b2103``)."""
    return "".join(ch for ch in value.casefold() if ch.isalnum())


def ids(text: str, pattern: str, case_sensitive: bool) -> Iterator[Found]:
    """Matches of the id pattern, and the same letters and digits spaced or joined
    otherwise (``O 1003``, ``B2103`` for ``B2-103``): a variant is read as an id."""
    body = pattern.removeprefix("^").removesuffix("$")
    flags = 0 if case_sensitive else regex.IGNORECASE
    compiled = regex.compile(rf"(?<![^\W_])(?:{body})(?![^\W_])", flags)
    try:
        compact = regex.compile(rf"(?:{_compact_pattern(body)})", flags)
    except regex.error:
        compact = None
    taken: list[tuple[int, int]] = []
    for m in compiled.finditer(text, timeout=_PATTERN_TIMEOUT_S):
        taken.append((m.start(), m.end()))
        yield Found(m[0], m.start(), m.end())
    if compact is None:
        return
    chunks = list(_CHUNK.finditer(text))[:_MAX_CHUNKS]
    for i, first in enumerate(chunks):
        for j in range(i, min(i + 3, len(chunks))):
            if j > i:
                gap = text[chunks[j - 1].end() : chunks[j].start()]
                if len(gap) > 2 or regex.fullmatch(r"[\s\-_./#]+", gap) is None:
                    break
            start, end = first.start(), chunks[j].end()
            if any(start < e and s < end for s, e in taken):
                continue
            joined = "".join(c[0] for c in chunks[i : j + 1])
            if compact.fullmatch(joined, timeout=_PATTERN_TIMEOUT_S):
                taken.append((start, end))
                yield Found(text[start:end], start, end)
