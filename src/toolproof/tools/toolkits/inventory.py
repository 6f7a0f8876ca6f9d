"""A shop's inventory, kept in the records under ``products``.

Record layout: ``products: {ID: {name, category, price, stock}}``.
"""

from __future__ import annotations

from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool


def _products(ctx: ToolContext) -> dict[str, Any]:
    products = ctx.world.records.setdefault("products", {})
    assert isinstance(products, dict)
    return products


def _product(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    products = _products(ctx)
    if product_id not in products:
        raise ToolError(f"no product with id {product_id!r}")
    item = products[product_id]
    assert isinstance(item, dict)
    return item


@tool(kind=ToolKind.READ)
def get_stock(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Return how many units of a product are in stock.

    Args:
        product_id: The product's id, e.g. "A".
    """
    return {"product_id": product_id, "stock": _product(ctx, product_id).get("stock", 0)}


@tool(kind=ToolKind.READ)
def get_product(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Return a product's details: name, category, price and stock.

    Args:
        product_id: The product's id, e.g. "A".
    """
    return {"product_id": product_id, **_product(ctx, product_id)}


@tool(kind=ToolKind.READ)
def list_products(ctx: ToolContext, category: str | None = None) -> list[dict[str, Any]]:
    """List products (id, name, category), optionally only those of one category.

    Args:
        category: Only list products of this category, e.g. "tools".
    """
    out = []
    for pid, item in sorted(_products(ctx).items()):
        if category is None or str(item.get("category", "")).lower() == category.lower():
            out.append(
                {"product_id": pid, "name": item.get("name"), "category": item.get("category")}
            )
    return out


@tool(kind=ToolKind.READ)
def search_products(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find products whose name contains the query (case-insensitive).

    Args:
        query: Part of a product name, e.g. "bolt".
    """
    q = query.lower()
    return [
        {"product_id": pid, "name": item.get("name"), "category": item.get("category")}
        for pid, item in sorted(_products(ctx).items())
        if q in str(item.get("name", "")).lower()
    ]


@tool(kind=ToolKind.WRITE)
def adjust_stock(ctx: ToolContext, product_id: str, delta: int) -> dict[str, Any]:
    """Add units to (positive delta) or remove units from (negative delta) a product's stock.

    Args:
        product_id: The product's id.
        delta: Units to add; negative to remove.
    """
    item = _product(ctx, product_id)
    new = int(item.get("stock", 0)) + delta
    if new < 0:
        raise ToolError(f"stock of {product_id!r} cannot go below 0 (now {item.get('stock', 0)})")
    item["stock"] = new
    return {"product_id": product_id, "stock": new}


@tool(kind=ToolKind.WRITE)
def set_price(ctx: ToolContext, product_id: str, price: float) -> dict[str, Any]:
    """Set a product's price.

    Args:
        product_id: The product's id.
        price: The new price, at least 0.
    """
    if price < 0:
        raise ToolError("price must be at least 0")
    item = _product(ctx, product_id)
    item["price"] = price
    return {"product_id": product_id, "price": price}
