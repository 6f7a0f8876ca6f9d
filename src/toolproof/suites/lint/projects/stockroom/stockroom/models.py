"""Value types: items and the shelf locations that hold them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Location:
    """A shelf position, e.g. aisle "B", shelf 3."""

    aisle: str
    shelf: int

    def label(self) -> str:
        """The label printed on the shelf, e.g. "B-03"."""
        return f"{self.aisle}-{self.shelf:02d}"


@dataclass
class Item:
    """A stock-keeping unit and how many of it are on hand."""

    sku: str
    name: str
    unit_price: float
    quantity: int = 0
    locations: list[Location] = field(default_factory=list)
    tags: set[str] = field(default_factory=set)

    @property
    def value(self) -> float:
        """Stock value of the item at its unit price."""
        return round(self.unit_price * self.quantity, 2)

    def is_low(self, threshold: int = 5) -> bool:
        """Whether the item should be reordered."""
        return self.quantity <= threshold
