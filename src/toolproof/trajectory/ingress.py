"""The one ingress for agent bytes (ARCHITECTURE.md, invariant 8).

Every value an agent supplies, by any road (an in-process agent's turn, an HTTP agent's
JSON, a model server's reply through the openai or anthropic adapters, MCP JSON-RPC, a
``cmd:`` agent's usage file, a request to the model gateway, a framework's callback),
passes one of these functions before anything else in the harness sees it. What passes is
plain data that nothing downstream (store, scorer, metrics, report) can fail on:

- text is a plain ``str`` of valid Unicode (no lone UTF-16 surrogate, which JSON's
  ``\\udcff`` escape makes and UTF-8 cannot encode), within a length;
- JSON data is dicts with string keys, lists, strings, finite numbers, bools and ``None``,
  within a size and a nesting depth;
- a count (tokens) is a non-negative ``int`` below :data:`MAX_COUNT`; a cost a finite,
  non-negative ``float`` below :data:`MAX_COST_USD` (or ``None``: unpriced).

Whatever fails is refused with an :class:`IngressError` that names the field and the fix.
It is always the agent's error (``agent_error``), never an infrastructure error: the agent
chose those bytes (invariant 8). Callers in the agents layer turn it into their
``AgentFault``; endpoints (the gateway, MCP, the live proxy) answer it as a client error.

This module is stdlib only and sits in the lowest layer that every road shares, so that
``gateway``, ``mcp``, ``live`` and ``agents`` all route through the same rules.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_TEXT_CHARS = 1_000_000
"""Characters of one text an agent sends (a reply, a final answer)."""
MAX_JSON_CHARS = 256 * 1024
"""Characters of one JSON value an agent sends as data (one call's arguments)."""
MAX_DEPTH = 32
"""Nesting of lists and objects in one JSON value."""
MAX_COUNT = 10**12
"""The largest token count accepted (a trillion tokens: no real call comes near)."""
MAX_COST_USD = 1e9
"""The largest cost accepted for one report, in US dollars."""


class IngressError(ValueError):
    """A value an agent sent is malformed or too big: always the agent's error.

    Attributes:
        field: Where the value was (``turn.content``, ``arguments.path``, ``usage.cost_usd``).
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone UTF-16 surrogate in ``text``, or None when it is valid."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _unicode(text: str, field: str) -> None:
    at = lone_surrogate(text)
    if at is not None:
        raise IngressError(
            field,
            f"holds a lone UTF-16 surrogate {text[at]!r} at character {at:,}: not valid "
            "Unicode (send UTF-8 text; a JSON escape such as \\udcff alone is invalid)",
        )


def text(value: object, field: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A plain ``str`` copy of an agent's text, valid Unicode and at most ``limit`` long.

    Raises:
        IngressError: not a string, too long, or not valid Unicode.
    """
    if not isinstance(value, str):
        raise IngressError(field, f"must be a string, got {type(value).__name__}")
    plain = str.__str__(value)  # a plain str, whatever subclass the agent used
    if len(plain) > limit:
        raise IngressError(
            field, f"has {len(plain):,} characters; the limit is {limit:,} (shorten it)"
        )
    _unicode(plain, field)
    return plain


def decode(raw: bytes, field: str, limit: int) -> str:
    """Bytes an agent sent, decoded as strict UTF-8, at most ``limit`` bytes.

    Raises:
        IngressError: too many bytes, or not UTF-8 (an encoded surrogate included).
    """
    if len(raw) > limit:
        raise IngressError(field, f"is {len(raw):,} bytes; the limit is {limit:,}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngressError(
            field, f"is not UTF-8 (byte {exc.start:,}: {exc.reason}); send UTF-8"
        ) from None


def _find_bad(value: object, field: str, depth: int = 0) -> None:
    """Raise an IngressError naming the first value in ``value`` that is not plain JSON."""
    if depth > MAX_DEPTH:
        raise IngressError(field, f"nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _unicode(value, field)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise IngressError(field, f"is {value!r}: not a finite number (JSON has no NaN)")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise IngressError(field, f"has a key of type {type(key).__name__}, not string")
            _unicode(key, f"{field} (a key)")
            _find_bad(item, f"{field}.{key[:40]}", depth + 1)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _find_bad(item, f"{field}[{i}]", depth + 1)


def _depth(value: object) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def json_value(value: object, field: str, limit: int = MAX_JSON_CHARS) -> Any:
    """A plain JSON copy of ``value`` (a deep copy the agent cannot change afterwards).

    Accepted: dicts with string keys, lists (tuples become lists), strings of valid
    Unicode, finite numbers, bools and ``None``, at most ``limit`` characters of JSON and
    :data:`MAX_DEPTH` levels deep.

    Raises:
        IngressError: anything else (a set, an object, a cycle, NaN or infinity, a lone
            surrogate, an integer too long to print, too deep, too big).
    """
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        _find_bad(value, field)
        raise IngressError(field, "is not valid Unicode") from None
    except ValueError as exc:  # NaN/inf, a cycle, an integer too long to print
        if not str(exc).startswith("Circular"):
            _find_bad(value, field)  # names the NaN's place; a cycle would only nest on
        raise IngressError(field, f"is not JSON data: ValueError: {exc}"[:300]) from None
    except RecursionError:
        raise IngressError(field, f"nests deeper than {MAX_DEPTH} levels") from None
    except Exception as exc:  # TypeError, or an odd object's own code raised
        raise IngressError(field, f"is not JSON data: {type(exc).__name__}: {exc}"[:300]) from None
    if len(encoded) > limit:
        raise IngressError(field, f"is {len(encoded):,} characters of JSON; the limit is {limit:,}")
    copy = json.loads(encoded)  # valid Unicode and finite: dumps and encode checked both
    if _depth(copy) > MAX_DEPTH:
        raise IngressError(field, f"nests deeper than {MAX_DEPTH} levels")
    return copy


def parse_json(raw: str | bytes, field: str, limit: int = MAX_JSON_CHARS) -> Any:
    """JSON text an agent sent, parsed into plain data under the same rules as :func:`json_value`.

    Raises:
        IngressError: not UTF-8, not JSON, too big, too deep, NaN or infinity, a lone
            surrogate (``"\\udcff"`` as an escape) anywhere, keys included.
    """
    source = decode(raw, field, limit * 4) if isinstance(raw, bytes) else raw
    if len(source) > limit:
        raise IngressError(field, f"is {len(source):,} characters; the limit is {limit:,}")
    try:
        data = json.loads(source, parse_constant=lambda name: _no_constant(name, field))
    except RecursionError:
        raise IngressError(field, f"nests deeper than {MAX_DEPTH} levels") from None
    except IngressError:
        raise
    except ValueError as exc:
        raise IngressError(field, f"is not valid JSON: {exc}"[:300]) from None
    if _depth(data) > MAX_DEPTH:
        raise IngressError(field, f"nests deeper than {MAX_DEPTH} levels")
    try:  # a "\udcff" escape parses into a lone surrogate, which UTF-8 cannot encode;
        # a number such as 1e400 parses into an infinity
        json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        _find_bad(data, field)
    return data


def _no_constant(name: str, field: str) -> Any:
    raise IngressError(field, f"holds {name}: not a finite number (JSON has no NaN or Infinity)")


def json_object(value: object, field: str, limit: int = MAX_JSON_CHARS) -> dict[str, Any]:
    """Like :func:`json_value`, for a value that must be a JSON object (call arguments)."""
    if not isinstance(value, dict):
        raise IngressError(field, f"must be a JSON object, got {type(value).__name__}")
    copy = json_value(value, field, limit)
    assert isinstance(copy, dict)
    return copy


def count(value: object, field: str) -> int:
    """A token count: a non-negative ``int`` (a whole float is taken) below :data:`MAX_COUNT`.

    Raises:
        IngressError: not a number, negative, fractional, not finite, or too large.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IngressError(field, f"must be a whole number, got {type(value).__name__}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise IngressError(field, f"must be a whole number, got {value!r}")
    number = int(value)
    if not 0 <= number <= MAX_COUNT:
        raise IngressError(field, f"must be from 0 to {MAX_COUNT:,}, got {number:,}")
    return number


def cost(value: object, field: str) -> float | None:
    """A cost in US dollars: ``None`` (unpriced) or a finite number from 0 to :data:`MAX_COST_USD`.

    Raises:
        IngressError: not a number, negative, not finite, or too large.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IngressError(field, f"must be a number or null, got {type(value).__name__}")
    if isinstance(value, int) and not 0 <= value <= MAX_COST_USD:  # float() of a huge int raises
        raise IngressError(field, f"must be a number from 0 to {MAX_COST_USD:,.0f}")
    number = float(value)
    if not (math.isfinite(number) and 0 <= number <= MAX_COST_USD):
        raise IngressError(
            field, f"must be a finite number from 0 to {MAX_COST_USD:,.0f}, got {value!r}"
        )
    return number
