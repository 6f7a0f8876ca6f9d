"""Quantities as people type them: "12", "3 boxes", "2 dozen"."""

from __future__ import annotations

MULTIPLIERS = {"": 1, "pcs": 1, "piece": 1, "pieces": 1, "dozen": 12, "box": 24, "boxes": 24}


class QuantityError(ValueError):
    """A quantity that cannot be read."""


def parse_quantity(text: str) -> int:
    """Read a quantity such as "3 boxes" (72) or "2 dozen" (24).

    Raises:
        QuantityError: the text is not a count with a known unit.
    """
    number, _, unit = text.strip().partition(" ")
    if not number.isdigit():
        raise QuantityError(f"not a quantity: {text!r}")
    unit = unit.strip().lower()
    if unit not in MULTIPLIERS:
        known = ", ".join(sorted(u for u in MULTIPLIERS if u))
        raise QuantityError(f"unknown unit {unit!r}; use one of {known}")
    return int(number) * MULTIPLIERS[unit]
