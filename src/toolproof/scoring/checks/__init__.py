"""Built-in check kinds; importing this package registers them."""

from . import custom, evidence, output, process, state

__all__ = ["custom", "evidence", "output", "process", "state"]
