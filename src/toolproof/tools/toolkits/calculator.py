"""The calculator: arithmetic through a safe parser, never ``eval``."""

from __future__ import annotations

from typing import Any

from toolproof.spec import arith
from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool


@tool(kind=ToolKind.READ)
def calculate(ctx: ToolContext, expression: str) -> dict[str, Any]:
    """Evaluate an arithmetic expression and return the result.

    Supports + - * / // % ** and parentheses, and the functions abs, round,
    min, max, sqrt, floor and ceil.

    Args:
        expression: The expression, e.g. "(15 + 27) * 2".
    """
    try:
        value = arith.evaluate(expression)
    except arith.ExpressionError as exc:
        raise ToolError(str(exc)) from None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ToolError(f"{expression!r} is not an arithmetic expression")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return {"expression": expression, "result": value}
