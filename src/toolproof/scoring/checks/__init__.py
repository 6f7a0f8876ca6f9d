"""Built-in check kinds; importing this package registers them."""

from . import (
    answer,
    ask,
    attack,
    custom,
    evidence,
    hidden_tests,
    judge,
    lint,
    output,
    process,
    state,
)

__all__ = [
    "answer",
    "ask",
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
