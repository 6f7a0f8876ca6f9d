"""Typed answers: the ``answer`` check kind, and what its declared type allows.

A task that asks for a value declares the answer's type as JSON Schema and how
the submitted value is compared with the expected one. Every agent is offered a
``submit_answer`` tool whose parameter is that schema, so a hedge ("42 or 46")
cannot be expressed: the scored answer is the structured value. A free-text
final answer is parsed for the loose score only (``scoring/checks/_loose.py``).

The supported types, each a small JSON Schema:

==========  ==========================================================
kind        schema
==========  ==========================================================
number      ``{type: number}`` or ``{type: integer}`` (with ``unit``)
date        ``{type: string, format: date}`` (``YYYY-MM-DD``)
time        ``{type: string, format: time}`` (``HH:MM``, 24 hours)
option      ``{type: string, enum: [...]}``: an id or word from a set
id          ``{type: string, pattern: ...}``: an id of a known shape
text        ``{type: string, maxLength: N}``: a short string (N <= 200)
list        ``{type: array, items: <one of the above>}``
object      ``{type: object, properties: {NAME: <number, date, time,
            option or id, or a list of one>, ...}}``: several facts in one
            answer (a name and a number), every property required, no other
==========  ==========================================================

One submission counts: the first valid ``submit_answer`` ends the episode, and a
second one with a different value (in the same turn) fails the answer, strict and
loose. A string answer is compared exactly after the declared normalisation (trimmed,
runs of spaces as one, case folded unless ``case_sensitive``), so a hedge written into
a string (``"ZX-42 or ZX-43"``) is not the value.

An object answer is compared property by property (numbers within the tolerance, strings
as declared, a list property as a set); its properties cannot be short free text
(``maxLength``), because the loose reading must find each of them in prose among rivals
of its type.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._numbers import finite, within

__all__ = [
    "ANSWER_TOOL",
    "AnswerCheck",
    "AnswerKind",
    "answer_kind",
    "answer_problems",
    "same_answer",
    "submit_schema",
]

ANSWER_TOOL = "submit_answer"
"""The tool through which every agent hands in a typed final answer."""

AnswerKind = Literal["number", "date", "time", "option", "id", "text", "list", "object"]
Compare = Literal["exact", "tolerance", "set", "order"]

MAX_TEXT = 200
"""Longest ``maxLength`` a short-string answer may declare."""
_TIME = re.compile(r"^(?:[01]\d|2[0-3]):[0-5]\d$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _scalar_kind(schema: dict[str, Any]) -> AnswerKind:
    """The kind of a scalar answer schema.

    Raises:
        ValueError: a schema this format does not support, with the supported ones.
    """
    kind = schema.get("type")
    if kind in ("number", "integer"):
        return "number"
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or len(values) < 2:
            raise ValueError("an enum answer needs a list of at least two options")
        if not all(isinstance(v, str) and v.strip() for v in values):
            raise ValueError("enum options must be non-empty strings (ids or words)")
        return "option"
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "date":
            return "date"
        if fmt == "time":
            return "time"
        if fmt is not None:
            raise ValueError(f"format {fmt!r} is not supported; use date or time")
        if "pattern" in schema:
            re.compile(str(schema["pattern"]))
            return "id"
        longest = schema.get("maxLength")
        if not isinstance(longest, int) or not 1 <= longest <= MAX_TEXT:
            raise ValueError(
                f"a string answer needs enum, pattern, format or maxLength (1..{MAX_TEXT}): "
                "a short typed value, not prose"
            )
        return "text"
    raise ValueError(
        f"answer type {schema!r} is not supported; use {{type: number}}, {{type: integer}}, "
        "{type: string, format: date|time}, {type: string, enum: [...]}, "
        "{type: string, pattern: ...}, {type: string, maxLength: N}, or "
        "{type: array, items: <one of these>}"
    )


def _object_properties(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The properties of an object answer, each checked to be a findable scalar.

    Raises:
        ValueError: no properties, a property of an unsupported kind, a property not
            required, or other properties allowed; each names the fix.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        raise ValueError("an object answer needs properties: {NAME: <a scalar answer type>}")
    for name, sub in properties.items():
        if not isinstance(sub, dict):
            raise ValueError(f"property {name!r} of the answer needs a scalar answer type")
        if sub.get("type") == "array":  # a list of scalars (the skipped SKUs): compared as a set
            items = sub.get("items")
            if not isinstance(items, dict):
                raise ValueError(f"property {name!r}: a list needs items: <a scalar answer type>")
            sub = items
        kind = _scalar_kind(sub)
        if kind == "text":
            raise ValueError(
                f"property {name!r}: an object's properties are numbers, dates, times, "
                "options (enum) or ids (pattern), not free text (maxLength)"
            )
    required = schema.get("required")
    if not isinstance(required, list) or sorted(map(str, required)) != sorted(properties):
        raise ValueError(
            f"an object answer requires every property: required: {sorted(properties)}"
        )
    if schema.get("additionalProperties") is not False:
        raise ValueError("an object answer needs additionalProperties: false (no extra fields)")
    return properties


def answer_kind(schema: dict[str, Any]) -> AnswerKind:
    """The kind of answer a declared schema asks for (see the module docstring).

    Raises:
        ValueError: the schema is not one of the supported shapes.
    """
    if schema.get("type") == "object":
        _object_properties(schema)
        return "object"
    if schema.get("type") == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            raise ValueError("a list answer needs items: <a scalar answer type>")
        _scalar_kind(items)
        return "list"
    return _scalar_kind(schema)


def item_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of one value: the items of a list answer, else the schema itself."""
    items = schema.get("items")
    return items if schema.get("type") == "array" and isinstance(items, dict) else schema


def _format_errors(schema: dict[str, Any], value: Any, where: str) -> list[str]:
    """The date and time formats, checked here (jsonschema leaves ``format`` unchecked)."""
    fmt = schema.get("format")
    if fmt is None or not isinstance(value, str):
        return []
    if fmt == "date":
        try:
            ok = bool(_DATE.match(value)) and bool(_dt.date.fromisoformat(value))
        except ValueError:
            ok = False
        return [] if ok else [f"{where}: {value[:40]!r} is not a date (YYYY-MM-DD)"]
    if fmt == "time":
        return [] if _TIME.match(value) else [f"{where}: {value[:40]!r} is not a time (HH:MM)"]
    return []


def _key(schema: dict[str, Any]) -> str | None:
    """The type's JSON, the caches' key (None: not plain JSON, e.g. a YAML date in an
    ``enum``; such a type is checked and used as it is, uncached)."""
    try:
        return json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _uncached(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


@functools.lru_cache(maxsize=256)
def _validator(key: str) -> Any:
    """A validator of the declared type with this JSON (built once: each episode renders
    its task, and a suite declares few distinct types)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(key))


@functools.lru_cache(maxsize=256)
def _schema_problem(key: str) -> str | None:
    """Why the declared type with this JSON is not a valid JSON Schema (None: it is);
    checked once per distinct type, not once per rendered episode."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(json.loads(key))
    except SchemaError as exc:
        return str(exc.message)
    return None


def _validator_of(schema: dict[str, Any]) -> Any:
    key = _key(schema)
    return _uncached(schema) if key is None else _validator(key)


def _type_problem(schema: dict[str, Any]) -> str | None:
    key = _key(schema)
    if key is not None:
        return _schema_problem(key)
    from jsonschema.exceptions import SchemaError

    try:
        _uncached(schema).check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None


def answer_problems(schema: dict[str, Any], value: Any) -> list[str]:
    """Why ``value`` is not a valid answer of this type (empty: it is valid).

    JSON Schema validation (jsonschema, Draft 2020-12) plus the date and time formats.
    """
    problems = [
        f"{'.'.join(str(p) for p in e.path) or 'answer'}: {e.message}"
        for e in _validator_of(schema).iter_errors(value)
    ]
    if problems:
        return problems
    if schema.get("type") == "array" and isinstance(value, list):
        items = item_schema(schema)
        return [p for i, v in enumerate(value) for p in _format_errors(items, v, f"answer.{i}")]
    if schema.get("type") == "object" and isinstance(value, dict):
        properties = schema.get("properties") or {}
        return [
            p
            for name, v in value.items()
            for p in _format_errors(properties.get(name) or {}, v, f"answer.{name}")
        ]
    return _format_errors(schema, value, "answer")


def submit_schema(check: AnswerCheck) -> dict[str, Any]:
    """The parameters of ``submit_answer`` for this answer: ``{answer: <declared type>}``."""
    declared = dict(check.type)
    if "description" not in declared:
        what = {
            "number": "A number" + (f" in {check.unit}" if check.unit else ""),
            "date": "A date, YYYY-MM-DD",
            "time": "A time, HH:MM (24 hours)",
            "option": "One of the listed options",
            "id": "One identifier",
            "text": "A short text",
            "list": "A list of values",
            "object": "One value for each field",
        }[answer_kind(check.type)]
        declared["description"] = f"{what}: your final answer."
    return {
        "type": "object",
        "properties": {"answer": declared},
        "required": ["answer"],
        "additionalProperties": False,
    }


def _norm(value: Any, case_sensitive: bool) -> Any:
    if isinstance(value, str):
        text = " ".join(value.split())
        return text if case_sensitive else text.casefold()
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and finite(value)  # finite: never float() a huge int


def same_answer(check: AnswerCheck, value: Any) -> bool:
    """Whether a (valid) submitted value equals the expected one, compared as declared.

    An object answer is compared property by property, every one of them required.
    """
    expected = check.expected
    compare = check.comparison
    if isinstance(expected, dict):
        if not isinstance(value, dict) or set(value) != set(expected):
            return False
        return all(same_answer(part(check, k), value[k]) for k in expected)
    if compare == "tolerance":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        centre = expected if isinstance(expected, int | float) else float(expected)
        return within(centre, value, check.tolerance)  # exact, and total on a huge int
    if compare in ("set", "order"):
        if not isinstance(value, list) or not isinstance(expected, list):
            return False
        got = [_norm(v, check.case_sensitive) for v in value]
        want = [_norm(v, check.case_sensitive) for v in expected]
        if len(got) != len(want):
            return False
        if all(_is_number(v) for v in [*got, *want]):  # numbers: within the tolerance
            if compare == "set":
                got, want = sorted(got), sorted(want)
            pairs = zip(got, want, strict=True)
            return all(within(w, g, check.tolerance) for g, w in pairs)
        if compare == "order":
            return got == want
        return len(got) == len(set(map(repr, got))) and sorted(map(repr, got)) == sorted(
            map(repr, want)
        )
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and value == expected  # exact: float() of an agent's huge int would raise
        )
    return bool(_norm(value, check.case_sensitive) == _norm(expected, check.case_sensitive))


def _object_expected(schema: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """An object's expected value with rendered numbers (``"12.5"``) made numbers."""
    properties = schema.get("properties") or {}
    out = dict(expected)
    for name, value in expected.items():
        sub = properties.get(name) or {}
        if sub.get("type") in ("number", "integer") and isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"expected.{name} {value!r} is not a number") from None
            out[name] = int(number) if sub.get("type") == "integer" else number
        elif sub.get("type") == "integer" and isinstance(value, float) and value.is_integer():
            out[name] = int(value)
    return out


def part(check: AnswerCheck, name: str) -> AnswerCheck:
    """One property of an object answer as an answer of its own (its type, its expected
    value, the object's tolerance and case rule), for comparing and loose reading."""
    return AnswerCheck.model_construct(
        kind="answer",
        name=check.name,
        weight=check.weight,
        type=check.type["properties"][name],
        expected=check.expected[name],
        compare=None,
        tolerance=check.tolerance,
        unit=None,
        case_sensitive=check.case_sensitive,
    )


class AnswerCheck(BaseModel):
    """The task's typed final answer: its type (JSON Schema), expected value, comparison.

    Every agent is offered ``submit_answer`` with this type; the submitted value is
    validated, then compared as declared (``pass@strict``). A free-text answer is
    parsed for ``pass@loose`` only: it passes when exactly one candidate of the
    type appears, with no rival candidate of that type and no negation of it.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["answer"] = "answer"
    name: str | None = Field(
        None, description="Short name used in reports and level rules; defaults to KIND_INDEX."
    )
    weight: float = Field(1.0, ge=0, description="Weight in the partial-credit fraction.")
    type: dict[str, Any] = Field(
        description=(
            "JSON Schema of the answer: {type: number}, {type: integer}, {type: string, "
            "format: date|time}, {type: string, enum: [...]}, {type: string, pattern: ...}, "
            "{type: string, maxLength: N}, {type: array, items: <one of these>}, or "
            "{type: object, properties: {NAME: <a number, date, time, enum or pattern "
            "type, or a list of one>}, required: [every NAME], additionalProperties: false}."
        )
    )
    expected: Any = Field(description="The right answer, a value of the declared type.")
    compare: Compare | None = Field(
        None,
        description=(
            "exact, tolerance (numbers), set or order (lists); default: tolerance for "
            "numbers with a tolerance, set for lists, else exact."
        ),
    )
    tolerance: float = Field(
        0.0,
        ge=0,
        description=(
            "Absolute tolerance of a number answer (or of each number of a list or object)."
        ),
    )
    unit: str | None = Field(None, description="The unit of a number answer (shown to agents).")
    case_sensitive: bool = Field(False, description="Compare strings case-sensitively.")

    @property
    def answer_kind(self) -> AnswerKind:
        """The declared type's kind."""
        return answer_kind(self.type)

    @property
    def comparison(self) -> Compare:
        """The comparison in effect (the declared one, or the type's default)."""
        if self.compare is not None:
            return self.compare
        kind = self.answer_kind
        if kind == "list":
            return "set"
        return "tolerance" if kind == "number" and self.tolerance > 0 else "exact"

    @model_validator(mode="after")
    def _consistent(self) -> AnswerCheck:
        problem = _type_problem(self.type)
        if problem is not None:
            raise ValueError(f"type is not a valid JSON Schema: {problem}")
        kind = answer_kind(self.type)
        compare = self.comparison
        if compare == "tolerance" and kind != "number":
            raise ValueError(f"compare: tolerance needs a number answer, the type is a {kind}")
        if compare in ("set", "order") and kind != "list":
            raise ValueError(f"compare: {compare} needs a list answer, the type is a {kind}")
        if kind == "object" and isinstance(self.expected, dict):
            self.expected = _object_expected(self.type, self.expected)
        if kind == "number" and isinstance(self.expected, str):
            try:  # a rendered template may give "12.5"
                number = float(self.expected)
            except ValueError:
                raise ValueError(f"expected {self.expected!r} is not a number") from None
            self.expected = int(number) if self.type.get("type") == "integer" else number
        integer = self.type.get("type") == "integer"
        if integer and isinstance(self.expected, float) and self.expected.is_integer():
            self.expected = int(self.expected)
        problems = answer_problems(self.type, self.expected)
        if problems:
            raise ValueError(
                f"expected {self.expected!r} does not fit the declared type: " + "; ".join(problems)
            )
        return self
