"""Total, exact comparisons of numbers an agent's answer or code produced.

An agent's value may be any JSON number or decimal: an int of thousands of digits,
``1e308``, ``-0.0``, ``Decimal('1E+999999999999999')``, a Decimal infinity or signalling
NaN. Converting such a value to a float (``float(10**400)``) or subtracting in the default
decimal context (``decimal.Overflow``, ``InvalidOperation``) raises, and a comparison that
raises reads as a broken check rather than the agent's wrong answer. The functions here
answer True or False for every value and never raise.

:func:`within` decides ``|expected - observed| <= tolerance`` exactly: ints and floats
convert to :class:`~decimal.Decimal` without loss, and the difference is taken in a local
context (no traps, the widest exponents) at 100,000 significant digits, rounded away from
zero. Rounding away from zero can only make the difference larger, and a float tolerance
has under 800 significant digits, so the rounded difference is within the tolerance exactly
when the true one is. A difference too large for any Decimal becomes Infinity: not within.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from typing import Any

__all__ = ["finite", "within"]

_EXACT = decimal.Context(
    prec=100_000,
    rounding=decimal.ROUND_UP,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[],
)


def finite(value: Any) -> bool:
    """Whether ``value`` is a finite number (an int of any size, a float, a Decimal); False
    for a bool, NaN, an infinity and anything that is not a number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Decimal):
        return value.is_finite()
    return False


def within(expected: Any, observed: Any, tolerance: Any) -> bool:
    """Whether two numbers differ by at most ``tolerance``, decided exactly (see the module).

    Equal values are within any tolerance (``inf`` is within of ``inf``); otherwise a value
    that is not a finite number (NaN, an infinity, a bool, a non-number), or a tolerance
    that is not a finite non-negative number, is not within.
    """
    try:
        if _number(expected) and _number(observed) and expected == observed:
            return True
        if not (finite(expected) and finite(observed) and finite(tolerance)) or tolerance < 0:
            return False
        gap = _EXACT.abs(_EXACT.subtract(Decimal(expected), Decimal(observed)))
        return gap.is_finite() and bool(gap <= Decimal(tolerance))
    except (ArithmeticError, ValueError, TypeError):  # nothing above should; never raise
        return False


def _number(value: Any) -> bool:
    """A number that compares with ``==`` without signalling (a signalling NaN does)."""
    if isinstance(value, Decimal):
        return not value.is_snan()
    return isinstance(value, int | float) and not isinstance(value, bool)
