"""Turn BFCL's possible answers into one concrete call, the way a correct model would.

A possible answer lists, per argument, every acceptable value; ``""`` among them
means the argument may be left out. The oracle takes the first acceptable value
(leaving optional arguments out), recursing into dictionaries and lists of
dictionaries, which BFCL writes the same way. Java and JavaScript arguments are
strings in the language's own syntax, as BFCL's checker expects of a model.
"""

from __future__ import annotations

import json
from typing import Any


def pick(values: list[Any]) -> tuple[bool, Any]:
    """``(present, value)``: the first acceptable value other than ``""``, else absent."""
    for value in values:
        if value != "":
            return True, _resolve(value)
    return False, None


def _resolve(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, options in value.items():
            present, chosen = pick(options) if isinstance(options, list) else (True, options)
            if present:
                out[key] = chosen
        return out
    if isinstance(value, list):
        return [_resolve(item) for item in value]
    return value


def to_source(
    value: Any, language: str, schema: dict[str, Any] | None = None, quote: bool = True
) -> str:
    """A value as Java or JavaScript source text (BFCL parses it back with its converters).

    Args:
        value: the value from the possible answer.
        language: ``java`` or ``javascript``.
        schema: the parameter's BFCL schema; its ``type`` picks Java's literal syntax.
        quote: quote strings inside collections (BFCL's Java parser wants some bare).
    """
    kind = str((schema or {}).get("type", ""))
    item_kind = str((schema or {}).get("items", {}).get("type", ""))
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and language == "java":
        suffix = {"long": "L", "float": "f"}.get(kind, "")
        return f"{value}{suffix}"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list) and language == "java":
        items = ", ".join(_literal(item, language, item_kind, quote) for item in value)
        if kind == "Array":
            return f"new {_JAVA_ELEMENT.get(item_kind, item_kind or 'Object')}[]{{{items}}}"
        return f"new ArrayList<>(Arrays.asList({items}))"
    if isinstance(value, dict) and language == "java":
        pairs = "; ".join(
            f"put({json.dumps(str(k))}, {_literal(v, language, '', quote)})"
            for k, v in value.items()
        )
        return f"new HashMap<String, String>() {{ {pairs}; }}"  # one brace: no template
    return json.dumps(value)


_JAVA_ELEMENT = {"integer": "int", "String": "String", "long": "long", "boolean": "boolean"}


def _literal(value: Any, language: str, kind: str = "", quote: bool = True) -> str:
    if isinstance(value, str):
        return json.dumps(value) if quote else value
    return to_source(value, language, {"type": kind}, quote)


def oracle_call(
    answer_args: dict[str, list[Any]],
    language: str,
    function: dict[str, Any],
    quote: bool = True,
) -> dict[str, Any]:
    """The arguments of one correct call for ``{arg: [acceptable values]}``.

    Args:
        answer_args: BFCL's possible answer for one call.
        language: ``python``, ``java`` or ``javascript``.
        function: the BFCL function document (its parameter types shape Java literals).
        quote: quote strings inside Java and JavaScript collections.
    """
    properties = function.get("parameters", {}).get("properties", {})
    args: dict[str, Any] = {}
    for arg, options in answer_args.items():
        present, value = pick(options)
        if present:
            schema = properties.get(arg)
            args[arg] = value if language == "python" else to_source(value, language, schema, quote)
    return args
