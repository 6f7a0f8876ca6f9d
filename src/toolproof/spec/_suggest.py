""" "Did you mean" for a mistyped name: the closest known names (difflib), as a clause to
append to an error message. Stdlib only, so any layer may use it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str], *, cutoff: float = 0.6) -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'``) for the names of ``known`` closest to
    ``name``; an empty string when none is close enough, so callers can always append it."""
    close = difflib.get_close_matches(str(name), sorted(set(known)), n=2, cutoff=cutoff)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
