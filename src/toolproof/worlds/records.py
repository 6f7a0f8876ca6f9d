"""Helpers over the in-memory JSON state: canonical digests, paths, flattening, diffs."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
MISSING = object()
"""Returned by :func:`get_path` for a path that does not exist."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal data, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """sha256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def parse_path(path: str) -> list[str | int]:
    """Split ``products.A.stock`` or ``orders[0].status`` into its parts."""
    parts: list[str | int] = []
    for name, index in _PATH_PART.findall(path):
        parts.append(int(index) if index else name)
    return parts


def get_path(data: Any, path: str) -> Any:
    """The value at ``path``, or :data:`MISSING`."""
    node = data
    for part in parse_path(path):
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
        elif isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return MISSING
    return node


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at ``path``, creating mappings on the way."""
    parts = parse_path(path)
    node: Any = data
    for part in parts[:-1]:
        if isinstance(node, list) and isinstance(part, int):
            node = node[part]
        else:
            node = node.setdefault(str(part), {})
    last = parts[-1]
    if isinstance(node, list) and isinstance(last, int):
        node[last] = value
    else:
        node[str(last)] = value


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf path to leaf value; empty containers are leaves too."""
    out: dict[str, Any] = {}
    if isinstance(value, dict) and value:
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
    else:
        out[prefix] = value
    return out


def diff(before: Any, after: Any) -> dict[str, list[Any]]:
    """Leaf paths whose values differ, mapped to ``[before, after]`` (``None`` if absent)."""
    a, b = flatten(before), flatten(after)
    changed: dict[str, list[Any]] = {}
    for path in sorted(a.keys() | b.keys()):
        if _grown_container(path, a, b) or _grown_container(path, b, a):
            continue
        if path not in a:
            changed[path] = [None, b[path]]
        elif path not in b:
            changed[path] = [a[path], None]
        elif not same_leaf(a[path], b[path]):
            changed[path] = [a[path], b[path]]
    return changed


def same_leaf(a: Any, b: Any) -> bool:
    """Equal as JSON leaves: ``1 == 1.0`` but ``True != 1`` and ``{} != []``."""
    if type(a) is type(b):
        return bool(a == b)
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return not isinstance(a, bool) and not isinstance(b, bool) and a == b
    return False


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than deepcopy."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def _grown_container(path: str, has: dict[str, Any], lacks: dict[str, Any]) -> bool:
    """An empty container leaf that the other side filled (its children show the change)."""
    if path in lacks or has.get(path) not in ({}, []):
        return False
    return any(p.startswith((path + ".", path + "[")) for p in lacks)
