"""The agent's own copies of its transcript and tools, fresh every turn and cheap to make.

An :class:`~toolproof.agents.Observation` holds copies an agent may edit without
touching what the engine records. A deep copy of every message and tool schema each
turn cost more than the rest of a turn together (``copy.deepcopy`` of nested dicts);
instead each item is turned into JSON once, when it joins the transcript, and parsed
back (in pydantic's Rust core) into new objects for every turn. An item whose JSON
does not give it back exactly (a NaN in an argument, a lone surrogate in a text) is
deep-copied as before.
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
        self._items: list[tuple[M, bytes | None]] = []
        self.extend(items)

    def add(self, item: M) -> None:
        """Append one item (its JSON is made now, once)."""
        self._items.append((item, _as_json(item)))

    def extend(self, items: Iterable[M]) -> None:
        """Append items in order."""
        for item in items:
            self.add(item)

    def fresh(self) -> list[M]:
        """New, independent copies of every item, in order."""
        return [
            type(item).model_validate_json(text) if text is not None else item.model_copy(deep=True)
            for item, text in self._items
        ]

    def __len__(self) -> int:
        return len(self._items)
