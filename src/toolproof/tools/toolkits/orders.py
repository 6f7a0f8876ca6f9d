"""Customers and orders, in the records under ``customers`` and ``orders``.

Record layout: ``customers: {ID: {name, email}}``, ``orders: {ID: {customer_id,
product_id, quantity, status}}``; creating an order takes units from
``products`` (see the inventory toolkit).
"""

from __future__ import annotations

from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool


def _table(ctx: ToolContext, name: str) -> dict[str, Any]:
    table = ctx.world.records.setdefault(name, {})
    assert isinstance(table, dict)
    return table


@tool(kind=ToolKind.READ)
def find_customer(ctx: ToolContext, name: str) -> list[dict[str, Any]]:
    """Find customers whose name contains the text (case-insensitive).

    Args:
        name: Part of the customer's name, e.g. "Ada".
    """
    q = name.lower()
    return [
        {"customer_id": cid, **item}
        for cid, item in sorted(_table(ctx, "customers").items())
        if q in str(item.get("name", "")).lower()
    ]


@tool(kind=ToolKind.READ)
def list_orders(
    ctx: ToolContext, customer_id: str, status: str | None = None
) -> list[dict[str, Any]]:
    """List a customer's orders, optionally only those with a given status.

    Args:
        customer_id: The customer's id, e.g. "C1".
        status: Only orders with this status: pending, shipped, delivered or cancelled.
    """
    if customer_id not in _table(ctx, "customers"):
        raise ToolError(f"no customer with id {customer_id!r}")
    return [
        {"order_id": oid, **item}
        for oid, item in sorted(_table(ctx, "orders").items())
        if item.get("customer_id") == customer_id
        and (status is None or item.get("status") == status)
    ]


@tool(kind=ToolKind.READ)
def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Return one order's details, including its status.

    Args:
        order_id: The order's id, e.g. "O1001".
    """
    orders = _table(ctx, "orders")
    if order_id not in orders:
        raise ToolError(f"no order with id {order_id!r}")
    return {"order_id": order_id, **orders[order_id]}


@tool(kind=ToolKind.WRITE)
def create_order(
    ctx: ToolContext, customer_id: str, product_id: str, quantity: int
) -> dict[str, Any]:
    """Place an order; the units are taken from stock at once.

    Args:
        customer_id: Who orders, e.g. "C1".
        product_id: What, e.g. "A".
        quantity: How many units, at least 1.
    """
    if quantity < 1:
        raise ToolError("quantity must be at least 1")
    if customer_id not in _table(ctx, "customers"):
        raise ToolError(f"no customer with id {customer_id!r}")
    products = _table(ctx, "products")
    if product_id not in products:
        raise ToolError(f"no product with id {product_id!r}")
    stock = int(products[product_id].get("stock", 0))
    if quantity > stock:
        raise ToolError(f"only {stock} units of {product_id!r} in stock")
    products[product_id]["stock"] = stock - quantity
    orders = _table(ctx, "orders")
    order_id = f"O{2001 + len(orders)}"
    orders[order_id] = {
        "customer_id": customer_id,
        "product_id": product_id,
        "quantity": quantity,
        "status": "pending",
    }
    return {"order_id": order_id, **orders[order_id]}


@tool(kind=ToolKind.WRITE)
def cancel_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Cancel a pending order and put its units back in stock.

    Args:
        order_id: The order to cancel.
    """
    orders = _table(ctx, "orders")
    if order_id not in orders:
        raise ToolError(f"no order with id {order_id!r}")
    order = orders[order_id]
    if order.get("status") != "pending":
        raise ToolError(
            f"order {order_id} is {order.get('status')}; only pending orders can be cancelled"
        )
    order["status"] = "cancelled"
    product = _table(ctx, "products").get(order.get("product_id"))
    if isinstance(product, dict):
        product["stock"] = int(product.get("stock", 0)) + int(order.get("quantity", 0))
    return {"order_id": order_id, **order}
