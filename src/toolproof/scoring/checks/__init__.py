"""Built-in check kinds; importing this package registers them."""

from . import attack, custom, evidence, hidden_tests, judge, lint, output, process, state

__all__ = [
    "attack",
    "custom",
    "evidence",
    "hidden_tests",
    "judge",
    "lint",
    "output",
    "process",
    "state",
]
