"""The inventory: items by SKU, stock moves, and look-ups."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .models import Item, Location
from .units import parse_quantity


class StockError(Exception):
    """A stock move that cannot happen (unknown item, not enough stock)."""


class Inventory:
    """Items by SKU with the moves that change their quantities."""

    def __init__(self, items: Iterable[Item] = ()) -> None:
        self._items: dict[str, Item] = {item.sku: item for item in items}
        self.history: list[tuple[str, int]] = []

    def __iter__(self) -> Iterator[Item]:
        return iter(sorted(self._items.values(), key=lambda item: item.sku))

    def __len__(self) -> int:
        return len(self._items)

    def get(self, sku: str) -> Item | None:
        """The item with this SKU, or None."""
        return self._items.get(sku)

    def require(self, sku: str) -> Item:
        """The item with this SKU.

        Raises:
            StockError: no such item.
        """
        item = self._items.get(sku)
        if item is None:
            raise StockError(f"unknown SKU {sku!r}")
        return item

    def add(self, item: Item) -> None:
        """Add a new item (its SKU must be new)."""
        if item.sku in self._items:
            raise StockError(f"SKU {item.sku!r} exists already")
        self._items[item.sku] = item

    def receive(self, sku: str, amount: str, location: Location | None = None) -> int:
        """Book incoming stock given as text ("3 boxes"); return the new quantity."""
        item = self.require(sku)
        count = parse_quantity(amount)
        item.quantity += count
        if location is not None and location not in item.locations:
            item.locations.append(location)
        self.history.append((sku, count))
        return item.quantity

    def ship(self, sku: str, count: int) -> int:
        """Book outgoing stock; return the new quantity.

        Raises:
            StockError: not enough stock.
        """
        item = self.require(sku)
        if count > item.quantity:
            raise StockError(f"only {item.quantity} of {sku} in stock, cannot ship {count}")
        item.quantity -= count
        self.history.append((sku, -count))
        return item.quantity

    def low_stock(self, threshold: int = 5) -> list[Item]:
        """Items at or below the threshold, lowest first."""
        return sorted((i for i in self if i.is_low(threshold)), key=lambda i: i.quantity)

    def tagged(self, tag: str) -> list[Item]:
        """Items carrying a tag."""
        return [item for item in self if tag in item.tags]
