"""Prices with volume discounts and VAT."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from .models import Item

VAT_RATE = Decimal("0.20")
VOLUME_DISCOUNTS = ((100, Decimal("0.10")), (50, Decimal("0.05")), (10, Decimal("0.02")))


def _money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def discount_rate(count: int) -> Decimal:
    """The volume discount for an order of ``count`` units."""
    for minimum, rate in VOLUME_DISCOUNTS:
        if count >= minimum:
            return rate
    return Decimal(0)


def order_total(item: Item, count: int, *, with_vat: bool = True) -> Decimal:
    """What ``count`` units of ``item`` cost, after the volume discount."""
    if count < 0:
        raise ValueError(f"count must not be negative, got {count}")
    net = Decimal(str(item.unit_price)) * count * (1 - discount_rate(count))
    if with_vat:
        net *= 1 + VAT_RATE
    return _money(net)


def price_list(items: list[Item], count: int = 1) -> dict[str, Decimal]:
    """SKU to the price of ``count`` units, for every item."""
    return {item.sku: order_total(item, count) for item in items}
