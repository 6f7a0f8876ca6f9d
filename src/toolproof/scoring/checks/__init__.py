"""Built-in check kinds; importing this package registers them."""

from . import answer, attack, custom, evidence, hidden_tests, judge, lint, output, process, state

__all__ = [
    "answer",
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
