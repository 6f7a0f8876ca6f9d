"""YAML/JSON loading that remembers the line of every node, for ``file:line`` errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, SpecError

Loc = tuple[str | int, ...]
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it (several times faster), else pure Python."""


class SourceMap:
    """Maps a field location (as pydantic reports it) to a line in the source file."""

    def __init__(self, file: Path, lines: dict[Loc, int]) -> None:
        self.file = file
        self._lines = lines

    def line_of(self, loc: Loc) -> int | None:
        """Return the line of ``loc`` or of its nearest ancestor that has one."""
        probe = tuple(loc)
        while True:
            if probe in self._lines:
                return self._lines[probe]
            if not probe:
                return None
            probe = probe[:-1]


def _walk(node: yaml.Node, loc: Loc, out: dict[Loc, int]) -> None:
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            out[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*loc, index), out)


def load_document(path: Path) -> tuple[Any, SourceMap]:
    """Parse a YAML or JSON file into plain data and a map of line numbers.

    Raises:
        SpecError: the file cannot be read or is not valid YAML/JSON.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([Problem(path, None, "", f"cannot read file: {exc.strerror}")]) from exc
    lines: dict[Loc, int] = {}
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            loader = _Loader(text)
            try:
                node = loader.get_single_node()
                if node is not None:
                    _walk(node, (), lines)
                    data = loader.construct_document(node)
                else:
                    data = None
            finally:
                loader.dispose()
    except json.JSONDecodeError as exc:
        raise SpecError([Problem(path, exc.lineno, "", f"invalid JSON: {exc.msg}")]) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise SpecError(
            [Problem(path, line, "", f"invalid YAML: {reason}; check indentation and quoting")]
        ) from exc
    return data, SourceMap(path, lines)
