"""Typed JSON values of hidden cases: what a case expects, what the agent's code returned.

A hidden case's expected value is written in the task file, and its observed value comes
back from the sandbox as JSON; both use one small typed form, repr-free, so that the
harness compares data and never evaluates anything the agent's code produced:

* ``null``, booleans, numbers, strings, lists (a tuple is a list) and objects with string
  keys are themselves;
* an object with one key starting with ``$`` is a tagged value: ``{"$decimal": "1.50"}``,
  ``{"$float": "nan"}`` (or ``"inf"``, ``"-inf"``), ``{"$date": "2026-01-30"}``,
  ``{"$datetime": ISO}``, ``{"$time": ISO}``, ``{"$timedelta": [days, seconds,
  microseconds]}``, ``{"$set": [...]}``, ``{"$map": [[key, value], ...]}`` (keys that are not
  strings), ``{"$bytes": HEX}``, ``{"$raised": {"type": NAME, "bases": [NAME...], "message":
  TEXT}}`` (an exception), ``{"$object": TYPE}`` (a value with no data form: equal to nothing).

:func:`decode` turns the typed form into Python values (:class:`Raised`, :class:`Opaque`,
:class:`TypedSet` and :class:`TypedMap` for what has no plain equivalent); :func:`same`
compares an expectation with an observation. The sandbox side (``_hidden_runner``) writes
the same form with the standard library alone.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from ._numbers import within

__all__ = [
    "Compare",
    "Opaque",
    "Raised",
    "TypedMap",
    "TypedSet",
    "ValueFormError",
    "decode",
    "same",
    "show",
]

Compare = Literal["equal", "approx", "contains"]
TAGS = (
    "$decimal",
    "$float",
    "$date",
    "$datetime",
    "$time",
    "$timedelta",
    "$set",
    "$map",
    "$bytes",
    "$raised",
    "$object",
)
_MAX_DEPTH = 32


class ValueFormError(ValueError):
    """A typed value that does not follow the form (an unknown tag, a bad date...)."""


@dataclass(frozen=True)
class Raised:
    """An exception the code raised: its type's name, its bases' names, its message."""

    type: str
    bases: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class Opaque:
    """A value with no data form (an instance of a class): equal to nothing."""

    type: str


@dataclass(frozen=True)
class TypedSet:
    """A set: its items, compared without order."""

    items: tuple[Any, ...]


@dataclass(frozen=True)
class TypedMap:
    """A mapping whose keys are not all plain strings: its pairs, compared without order."""

    pairs: tuple[tuple[Any, Any], ...]


def _fail(where: str, problem: str) -> ValueFormError:
    return ValueFormError(f"{where}: {problem}")


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, f"must be a string, not {type(value).__name__}")
    return value


def _iso(cls: type[Any], value: object, where: str) -> Any:
    try:
        return cls.fromisoformat(_text(value, where))
    except ValueError as exc:
        raise _fail(where, f"is not an ISO {cls.__name__}: {exc}") from None


def _tagged(tag: str, body: Any, where: str, depth: int) -> Any:
    if tag == "$decimal":
        if isinstance(body, bool) or not isinstance(body, str | int | float):
            raise _fail(where, "$decimal must be a string (or a number)")
        try:
            return Decimal(str(body))
        except (InvalidOperation, ValueError):  # ValueError: an int too long for str()
            raise _fail(where, f"{body!r} is not a decimal number") from None
    if tag == "$float":
        if body not in ("nan", "inf", "-inf"):
            raise _fail(where, '$float must be "nan", "inf" or "-inf"')
        return float(body)
    if tag == "$date":
        return _iso(dt.date, body, where)
    if tag == "$datetime":
        return _iso(dt.datetime, body, where)
    if tag == "$time":
        return _iso(dt.time, body, where)
    if tag == "$timedelta":
        parts = body if isinstance(body, list) else []
        if len(parts) != 3 or not all(type(p) is int for p in parts):
            raise _fail(where, "$timedelta must be [days, seconds, microseconds] (integers)")
        try:
            return dt.timedelta(days=parts[0], seconds=parts[1], microseconds=parts[2])
        except OverflowError:
            raise _fail(where, "$timedelta is out of range") from None
    if tag == "$set":
        if not isinstance(body, list):
            raise _fail(where, "$set must be a list of items")
        return TypedSet(tuple(_decode(i, f"{where}[{n}]", depth + 1) for n, i in enumerate(body)))
    if tag == "$map":
        if not isinstance(body, list) or not all(isinstance(p, list) and len(p) == 2 for p in body):
            raise _fail(where, "$map must be a list of [key, value] pairs")
        return TypedMap(
            tuple(
                (
                    _decode(k, f"{where}[{n}][0]", depth + 1),
                    _decode(v, f"{where}[{n}][1]", depth + 1),
                )
                for n, (k, v) in enumerate(body)
            )
        )
    if tag == "$bytes":
        try:
            return bytes.fromhex(_text(body, where))
        except ValueError:
            raise _fail(where, "$bytes must be hexadecimal") from None
    if tag == "$raised":
        if not isinstance(body, dict):
            raise _fail(where, "$raised must be an object with type, bases and message")
        bases = body.get("bases", [])
        if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
            raise _fail(where, "$raised.bases must be a list of names")
        name = _text(body.get("type"), f"{where}.type")
        return Raised(name, tuple(bases), _text(body.get("message", ""), f"{where}.message"))
    if tag == "$object":
        return Opaque(_text(body, where))
    raise _fail(where, f"unknown tag {tag!r}; known: {', '.join(TAGS)}")


def _decode(value: Any, where: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise _fail(where, f"nests deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _fail(where, 'a non-finite number must be written {"$float": "nan"}')
        return value
    if isinstance(value, list):
        return [_decode(v, f"{where}[{n}]", depth + 1) for n, v in enumerate(value)]
    if isinstance(value, dict):
        keys = list(value)
        if len(keys) == 1 and isinstance(keys[0], str) and keys[0].startswith("$"):
            return _tagged(keys[0], value[keys[0]], where, depth)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str) or key.startswith("$"):
                raise _fail(where, f"key {key!r}: use $map for keys that are not plain strings")
            out[key] = _decode(item, f"{where}.{key}", depth + 1)
        return out
    raise _fail(where, f"{type(value).__name__} is not a typed JSON value")


def decode(value: Any, where: str = "value") -> Any:
    """The Python value of a typed JSON value.

    Raises:
        ValueFormError: the value does not follow the form; the message names ``where``.
    """
    return _decode(value, where, 0)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unordered(want: tuple[Any, ...], got: tuple[Any, ...], compare: Compare, tol: float) -> bool:
    if len(want) != len(got):
        return False
    left = list(got)
    for item in want:
        hit = next((n for n, g in enumerate(left) if same(item, g, compare, tol)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def same(expected: Any, observed: Any, compare: Compare = "equal", tolerance: float = 0.0) -> bool:
    """Whether an observation meets an expectation (both decoded).

    ``equal`` compares data of the same kind (a Decimal is never equal to a float, a bool
    never to a number; numbers compare by value, sets and mappings without order);
    ``approx`` lets numbers (and Decimals) differ by at most ``tolerance``, decided exactly
    (``_numbers.within``: a huge int, ``1e308`` or a Decimal beyond any float is simply
    not within); ``contains`` asks for a string inside the observed string, or an item
    inside the observed list. An exception or an :class:`Opaque` value is equal to nothing.
    Total: for any two decoded values it answers True or False and never raises.
    """
    if isinstance(observed, Raised | Opaque) or isinstance(expected, Raised | Opaque):
        return False
    if compare == "contains":
        if isinstance(expected, str) and isinstance(observed, str):
            return expected in observed
        if isinstance(observed, list):
            return any(same(expected, item) for item in observed)
        return False
    if isinstance(expected, bool) or isinstance(observed, bool):
        return type(expected) is type(observed) and expected == observed
    if _number(expected) and _number(observed):
        nan = [isinstance(v, float) and math.isnan(v) for v in (expected, observed)]
        if any(nan):
            return all(nan)
        if compare == "approx":
            return within(expected, observed, tolerance)
        return bool(expected == observed)
    if isinstance(expected, Decimal) and isinstance(observed, Decimal):
        if expected.is_nan() or observed.is_nan():
            return expected.is_nan() and observed.is_nan()
        if compare == "approx":
            return within(expected, observed, tolerance)
        return expected == observed
    if isinstance(expected, list) and isinstance(observed, list):
        return len(expected) == len(observed) and all(
            same(e, o, compare, tolerance) for e, o in zip(expected, observed, strict=True)
        )
    if isinstance(expected, dict) and isinstance(observed, dict):
        return expected.keys() == observed.keys() and all(
            same(v, observed[k], compare, tolerance) for k, v in expected.items()
        )
    if isinstance(expected, TypedSet) and isinstance(observed, TypedSet):
        return _unordered(expected.items, observed.items, compare, tolerance)
    if isinstance(expected, TypedMap) and isinstance(observed, TypedMap):
        want = tuple(list(p) for p in expected.pairs)
        got = tuple(list(p) for p in observed.pairs)
        return _unordered(want, got, compare, tolerance)
    return type(expected) is type(observed) and bool(expected == observed)


def show(value: Any, limit: int = 160) -> str:
    """A short text of a decoded value, for details (never evaluated)."""
    if isinstance(value, Raised):
        text = f"raised {value.type}: {value.message}"
    elif isinstance(value, Opaque):
        text = f"<{value.type} object>"
    elif isinstance(value, Decimal):
        text = f"Decimal('{value}')"
    else:
        try:
            text = repr(value)
        except ValueError:  # an int past Python's digit limit for str()
            text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
