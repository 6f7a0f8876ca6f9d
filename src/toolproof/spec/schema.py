"""JSON Schema of the task format, generated from the pydantic models and shipped.

The shipped copies live in ``src/toolproof/schema/``; regenerate them with::

    toolproof schema > src/toolproof/schema/task.schema.json
    toolproof schema --suite > src/toolproof/schema/suite.schema.json
"""

from __future__ import annotations

from typing import Any

from .suite import SuiteConfig
from .task import Task

SCHEMA_ID = "https://toolproof.dev/schema/task-v1.json"

_TEMPLATE = {
    "type": "string",
    "pattern": r"^\s*\{\{.*\}\}\s*$",
    "description": "A {{ expression }} over the task's params, rendered before validation.",
}
_TEMPLATE_REF = {"$ref": "#/$defs/Template"}
_META = ("title", "description", "default")
_NOT_RENDERED = {"ParamSpec"}
"""Definitions the loader validates as written (``params`` are not templates)."""


def task_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every task file validates against.

    The loader renders ``{{ expr }}`` templates before it validates, so a typed
    field (a number, an integer, a boolean, an enum, a list or a free-form
    mapping) may also hold a template string such as ``number: "{{ total }}"``
    or ``any_of: "{{ names }}"``; the schema says so. Whole models (``world``,
    a check) stay strict, and ``params`` are never templates.
    """
    schema = Task.model_json_schema(by_alias=True)
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    enums = {f"#/$defs/{name}" for name, d in defs.items() if "enum" in d}
    for name in list(defs):
        if name not in _NOT_RENDERED:
            defs[name] = _templated(defs[name], enums, wrap=False)  # wrapped where used
    schema = dict(schema, properties=_templated(schema, enums)["properties"])
    defs["Template"] = dict(_TEMPLATE)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "toolproof task (format v1)"
    return schema


def _scalar(node: dict[str, Any], enums: set[str]) -> bool:
    """Whether a template string may stand for this schema's value (not a whole model)."""
    free_form = node.get("type") == "object" and "properties" not in node
    return (
        node.get("type") in ("number", "integer", "boolean", "array")
        or free_form
        or ("enum" in node and "const" not in node)
        or node.get("$ref") in enums
    )


def _templated(node: Any, enums: set[str], *, wrap: bool = True) -> Any:
    """A copy of ``node`` where every typed scalar also accepts a template string."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _templated(v, enums) for k, v in out["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _templated(out[key], enums)
    if isinstance(out.get("prefixItems"), list):
        out["prefixItems"] = [_templated(v, enums) for v in out["prefixItems"]]
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            members = [_templated(m, enums, wrap=False) for m in out[key]]
            if key == "anyOf" and any(_scalar(m, enums) for m in members):
                members.append(dict(_TEMPLATE_REF))
            out[key] = members
    if wrap and _scalar(out, enums):
        meta = {k: out.pop(k) for k in _META if k in out}
        return {"anyOf": [out, dict(_TEMPLATE_REF)], **meta}
    return out


def suite_schema() -> dict[str, Any]:
    """The JSON Schema of ``suite.yaml``."""
    schema = SuiteConfig.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "toolproof suite.yaml"
    return schema
