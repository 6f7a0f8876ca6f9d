"""The agent's own copies of its transcript and tools, each made once.

An :class:`~toolproof.agents.Observation` holds copies an agent may edit without
touching what the engine records. Each item is copied once, when the agent first sees
it: turned into JSON and parsed back (in pydantic's Rust core) into a new object; an
item whose JSON does not give it back exactly (a NaN in an argument, a lone surrogate
in a text) is deep-copied. Later turns hand out the same copies in a new list, so a
turn costs the new items only, not the whole conversation again (a long episode's
turns were quadratic). An agent that edits its copies changes only what it sees
itself, as if it kept notes; the record is never reached.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def _as_json(item: BaseModel) -> bytes | None:
    """JSON that parses back to an equal object with the same set fields, else None."""
    try:
        text = item.model_dump_json(exclude_unset=True)
        if "null" not in text:  # JSON loses nothing else: NaN and infinities become null
            return text.encode()
        back = type(item).model_validate_json(text)
    except ValueError:  # pydantic's errors (a surrogate that UTF-8 cannot hold) included
        return None
    if back != item or back.model_fields_set != item.model_fields_set:
        return None
    return text.encode()


class AgentCopies(Generic[M]):
    """A growing list of models handed out as new objects on each :meth:`fresh`."""

    def __init__(self, items: Iterable[M] = ()) -> None:
        self._items: list[M] = []
        self._copies: list[M] = []
        self.extend(items)

    def add(self, item: M) -> None:
        """Append one item (copied when :meth:`fresh` first hands it out)."""
        self._items.append(item)

    def extend(self, items: Iterable[M]) -> None:
        """Append items in order."""
        for item in items:
            self.add(item)

    def fresh(self) -> list[M]:
        """A new list of the agent's copies of every item, in order: the items added since
        the last call are copied now, the others are the copies handed out before."""
        for item in self._items[len(self._copies) :]:
            text = _as_json(item)
            copy = type(item).model_validate_json(text) if text else item.model_copy(deep=True)
            self._copies.append(copy)
        return list(self._copies)

    def __len__(self) -> int:
        return len(self._items)
