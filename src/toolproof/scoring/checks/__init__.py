"""Built-in check kinds; importing this package registers them."""

from . import custom, evidence, judge, output, process, state

__all__ = ["custom", "evidence", "judge", "output", "process", "state"]
