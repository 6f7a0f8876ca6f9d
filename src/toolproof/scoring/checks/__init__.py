"""Built-in check kinds; importing this package registers them."""

from . import attack, custom, evidence, judge, lint, output, process, state

__all__ = ["attack", "custom", "evidence", "judge", "lint", "output", "process", "state"]
