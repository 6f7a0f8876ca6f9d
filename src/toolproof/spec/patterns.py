"""Regular expressions from task files, matched against agent-controlled text in bounded time.

A task author writes a pattern (an output check's ``regex``, a file expectation's
``regex``, a policy rule's ``regex``); the agent writes the text it is matched
against (its answer, a file, a command line). Python's :mod:`re` has no time
bound, so a pattern that backtracks badly (``^(a|a)*$``) plus an answer made to
trigger it would hold a scoring or policy thread for hours. Matching goes
through the `regex <https://pypi.org/project/regex/>`_ package instead, which
accepts the same syntax and takes a timeout: a match that runs past
:data:`MATCH_TIMEOUT_S` is reported as :data:`TIMED_OUT`, and each caller
decides the safe reading (a check fails, a policy rule counts as broken).
"""

from __future__ import annotations

import functools
from typing import Final, Literal

import regex

__all__ = ["MATCH_TIMEOUT_S", "TIMED_OUT", "check_pattern", "search"]

#: Longest time one match may take, in seconds.
MATCH_TIMEOUT_S: Final = 1.0
#: What :func:`search` returns when the match ran out of time.
TIMED_OUT: Final = "timed out"


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, flags: int) -> regex.Pattern[str]:
    return regex.compile(pattern, flags)


def check_pattern(pattern: str) -> str:
    """Validate a task file's pattern: it must compile (for pydantic validators).

    Raises:
        ValueError: naming the pattern and the compiler's complaint.
    """
    try:
        _compiled(pattern, 0)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise ValueError(f"regex {pattern!r} does not compile: {exc}") from None
    return pattern


def search(
    pattern: str,
    text: str,
    *,
    ignore_case: bool = False,
    multiline: bool = False,
    timeout_s: float = MATCH_TIMEOUT_S,
) -> bool | Literal["timed out"]:
    """Whether ``pattern`` matches somewhere in ``text``, within ``timeout_s``.

    Returns:
        True or False, or :data:`TIMED_OUT` when the match did not finish in time.

    Raises:
        ValueError: the pattern does not compile (validation normally catches it first).
    """
    flags = (regex.IGNORECASE if ignore_case else 0) | (regex.MULTILINE if multiline else 0)
    compiled = _compiled(check_pattern(pattern), flags)
    try:
        return compiled.search(text, timeout=timeout_s) is not None
    except TimeoutError:
        return TIMED_OUT
