"""Plain-text reports of the inventory."""

from __future__ import annotations

from .inventory import Inventory
from .models import Item


def _row(item: Item) -> str:
    places = ", ".join(loc.label() for loc in item.locations) or "-"
    return f"{item.sku:<8} {item.name:<24} {item.quantity:>6} {item.value:>10.2f}  {places}"


def stock_report(inventory: Inventory) -> str:
    """One line per item and a total line."""
    lines = [f"{'SKU':<8} {'NAME':<24} {'QTY':>6} {'VALUE':>10}  LOCATIONS"]
    lines += [_row(item) for item in inventory]
    total = sum(item.value for item in inventory)
    lines.append(f"{'TOTAL':<8} {'':<24} {'':>6} {total:>10.2f}")
    return "\n".join(lines)


def reorder_report(inventory: Inventory, threshold: int = 5) -> str:
    """Items to reorder, or a line saying there are none."""
    low = inventory.low_stock(threshold)
    if not low:
        return "nothing to reorder"
    return "\n".join(f"reorder {item.sku} ({item.quantity} left)" for item in low)
