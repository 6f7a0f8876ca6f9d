"""A safe expression evaluator: arithmetic, comparisons and conditionals, never ``eval``.

The expression is parsed with :mod:`ast` and walked over a whitelist of node
types, so a hostile string can at worst raise :class:`ExpressionError`. It
serves the ``calculator`` tool and computed task parameters (``expr:``).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Not: operator.not_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "floor": math.floor,
    "ceil": math.ceil,
    "int": int,
    "float": float,
    "str": str,
    "len": len,
    "index": lambda seq, item: list(seq).index(item),
    "sum": sum,
}
_MAX_POWER = 10_000
_MAX_LENGTH = 500
_MAX_BITS = 14_000
"""Largest integer an expression may build (about 4,200 digits, still printable)."""
_MAX_ITEMS = 10_000
"""Longest string or list a repetition (``'ab' * n``) may build."""
_MAX_SIZE = 1_000_000
"""Largest value a repetition may build, counting every item and character of nested lists
(``[['x' * 9999] * 9999] * 9999`` would be 10**12 characters once printed)."""


def _size(value: Any, limit: int) -> int:
    """Items plus characters of ``value``, nested lists included; stops counting past ``limit``."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        total += 1 + (len(item) if isinstance(item, str) else 0)
        if isinstance(item, list):
            stack.extend(item)
    return total


class ExpressionError(ValueError):
    """The expression is not allowed or cannot be computed."""


def evaluate(expression: str, names: Mapping[str, Any] | None = None) -> Any:
    """Compute ``expression`` with the given variable ``names``.

    Supports numbers, strings, ``+ - * / // % **``, comparisons, ``and/or/not``,
    ``x if cond else y`` and the functions ``abs round min max sqrt floor ceil
    int float str len index sum``, indexing ``x[i]`` and list literals.

    Raises:
        ExpressionError: on syntax errors, unknown names, disallowed constructs,
            division by zero or oversized results.
    """
    if len(expression) > _MAX_LENGTH:
        raise ExpressionError(f"expression is longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expression!r}: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, deep nesting
        raise ExpressionError(f"cannot parse {expression!r}: {exc}") from None
    try:
        return _eval(tree.body, names or {})
    except ExpressionError:
        raise
    except ZeroDivisionError:
        raise ExpressionError(f"division by zero in {expression!r}") from None
    except (TypeError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        # ValueError: sqrt(-1), int('x'), index() of a missing item.
        raise ExpressionError(f"cannot compute {expression!r}: {exc}") from None


def _refuse_oversized(op: ast.operator, lhs: Any, rhs: Any) -> None:
    """Refuse, before computing it, a power or repetition too large to hold or print."""
    powers = isinstance(op, ast.Pow) and isinstance(lhs, int) and isinstance(rhs, int)
    if powers and rhs > 0 and max(abs(lhs).bit_length() - 1, 0) * rhs > _MAX_BITS:
        raise ExpressionError(f"{lhs} ** {rhs} is too large")
    texts = isinstance(op, ast.Add) and isinstance(lhs, str) and isinstance(rhs, str)
    if texts and len(lhs) + len(rhs) > _MAX_SIZE:
        raise ExpressionError(f"a text of more than {_MAX_SIZE:,} characters is too large")
    lists = isinstance(op, ast.Add) and isinstance(lhs, list) and isinstance(rhs, list)
    if lists and _size(lhs, _MAX_SIZE) + _size(rhs, _MAX_SIZE) > _MAX_SIZE:
        raise ExpressionError("the joined list is too large")
    if isinstance(op, ast.Mult):
        for seq, times in ((lhs, rhs), (rhs, lhs)):
            sized = isinstance(seq, str | list) and isinstance(times, int)
            if sized and len(seq) * times > _MAX_ITEMS:
                raise ExpressionError(f"a repetition of {times} is too large")
            if sized and isinstance(seq, list) and _size(seq, _MAX_SIZE) * times > _MAX_SIZE:
                raise ExpressionError(f"a repetition of {times} builds too large a value")


def _eval(node: ast.expr, names: Mapping[str, Any]) -> Any:
    match node:
        case ast.Constant(value=value) if isinstance(value, int | float | str | bool):
            return value
        case ast.Name(id=name):
            if name in ("True", "False"):
                return name == "True"
            if name not in names:
                known = ", ".join(sorted(names)) or "none"
                raise ExpressionError(f"unknown name {name!r} (known: {known})")
            return names[name]
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            lhs, rhs = _eval(left, names), _eval(right, names)
            if isinstance(op, ast.Pow) and isinstance(rhs, int | float) and abs(rhs) > _MAX_POWER:
                raise ExpressionError(f"exponent {rhs} is too large")
            _refuse_oversized(op, lhs, rhs)
            value = _BINARY[type(op)](lhs, rhs)
            if isinstance(value, int) and value.bit_length() > _MAX_BITS:
                raise ExpressionError(f"the result has more than {_MAX_BITS} bits")
            return value
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            return _UNARY[type(op)](_eval(operand, names))
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            current = _eval(left, names)
            for cmp, comparator in zip(ops, comparators, strict=True):
                if type(cmp) not in _COMPARE:
                    raise ExpressionError(f"comparison {type(cmp).__name__} is not allowed")
                right_value = _eval(comparator, names)
                if not _COMPARE[type(cmp)](current, right_value):
                    return False
                current = right_value
            return True
        case ast.BoolOp(op=ast.And(), values=values):
            result: Any = True
            for value in values:
                result = _eval(value, names)
                if not result:
                    return result
            return result
        case ast.BoolOp(op=ast.Or(), values=values):
            result = False
            for value in values:
                result = _eval(value, names)
                if result:
                    return result
            return result
        case ast.Subscript(value=value, slice=index) if not isinstance(index, ast.Slice):
            container, key = _eval(value, names), _eval(index, names)
            try:
                return container[key]
            except (IndexError, KeyError, TypeError):
                raise ExpressionError(f"cannot index {container!r} with {key!r}") from None
        case ast.List(elts=elements) | ast.Tuple(elts=elements):
            built = [_eval(e, names) for e in elements]
            if (
                _size(built, _MAX_SIZE) > _MAX_SIZE
            ):  # items are shared: cheap to build, not to print
                raise ExpressionError(f"a list of more than {_MAX_SIZE:,} items and characters")
            return built
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body, names) if _eval(test, names) else _eval(orelse, names)
        case ast.Call(func=ast.Name(id=fname), args=args, keywords=[]) if fname in _FUNCTIONS:
            return _FUNCTIONS[fname](*(_eval(a, names) for a in args))
        case ast.Call():
            allowed = ", ".join(sorted(_FUNCTIONS))
            raise ExpressionError(f"only these functions are allowed: {allowed}")
    raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")
