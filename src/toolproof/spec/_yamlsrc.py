"""YAML/JSON loading that remembers the line of every node, for ``file:line`` errors.

Task files are data written by anyone, so reading one is bounded before anything
is built from it: the file's size (:data:`MAX_FILE_BYTES`), how deeply it nests
(:data:`MAX_DEPTH`), and how many nodes it stands for once every YAML alias is
expanded (:data:`MAX_NODES`; a "billion laughs" file is refused from the parser's
events, in constant memory, before a single node is expanded). Numbers must be
finite and within :data:`MAX_INT` of zero. Each refusal is a :class:`Problem`
naming the file and the line.
"""

from __future__ import annotations

import json
import math
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, SpecError

Loc = tuple[str | int, ...]
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it (several times faster), else pure Python."""

MAX_FILE_BYTES = 1 << 20
"""Largest task or suite file read (1 MiB; the largest built-in task is about 20 KB)."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and lists (built-in tasks nest 8 deep)."""
MAX_NODES = 100_000
"""Most nodes a document may stand for, aliases expanded (built-in tasks have under 2,000)."""
MAX_INT = 2**53
"""Largest integer magnitude (the largest that every JSON reader holds exactly)."""
_MAX_INT_DIGITS = 24
"""Integer literals longer than this are refused before Python converts them."""
_INT_TAG = "tag:yaml.org,2002:int"


class SourceMap:
    """Maps a field location (as pydantic reports it) to a line in the source file."""

    def __init__(self, file: Path, lines: dict[Loc, int]) -> None:
        self.file = file
        self._lines = lines

    def __eq__(self, other: object) -> bool:
        """Equal when both map the same file the same way (so tasks loaded twice are equal)."""
        if not isinstance(other, SourceMap):
            return NotImplemented
        return self.file == other.file and self._lines == other._lines

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dict it holds

    def line_of(self, loc: Loc) -> int | None:
        """Return the line of ``loc`` or of its nearest ancestor that has one."""
        probe = tuple(loc)
        while True:
            if probe in self._lines:
                return self._lines[probe]
            if not probe:
                return None
            probe = probe[:-1]


def _refuse(path: Path, line: int | None, field: str, message: str) -> SpecError:
    return SpecError([Problem(path, line, field, message)])


_MAX_KEY_SHOWN = 80


def _shown_key(part: str) -> str:
    """A mapping key as a field name shows it: control characters escaped, long ones cut."""
    shown = part if part.isprintable() else repr(part)[1:-1]
    return shown if len(shown) <= _MAX_KEY_SHOWN else shown[: _MAX_KEY_SHOWN - 3] + "..."


def field_text(loc: Loc) -> str:
    """``("success", 0, "equals")`` as ``success[0].equals``, the way problems name fields."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{_shown_key(part)}" if text else _shown_key(str(part))
    return text


def _read_text(path: Path) -> str:
    """The file's text, refusing special files, oversized files and bytes that are not UTF-8."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, None, "", "not a regular file; give a YAML or JSON task file")
        size = info.st_size
        if size > MAX_FILE_BYTES:
            raise _refuse(
                path,
                None,
                "",
                f"the file is {size:,} bytes, more than the {MAX_FILE_BYTES:,} a task file may "
                "have; move large data into fixtures",
            )
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _refuse(path, None, "", f"cannot read file: {exc.strerror}") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise _refuse(path, None, "", f"the file grew past {MAX_FILE_BYTES:,} bytes while read")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _refuse(
            path, line, "", f"byte {exc.start} is not UTF-8 text; save the file as UTF-8"
        ) from None


def _check_events(path: Path, text: str) -> None:
    """Walk the parser's events and refuse deep nesting and alias explosions.

    Every anchor's size (in nodes, its own aliases expanded) is recorded when its
    node ends, so an alias adds that size without expanding anything; an alias to a
    node that is still open (a node that contains itself) is refused.
    """
    loader = _Loader(text)
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, node count at its start)
    open_anchors: set[str] = set()
    count = 0
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]  # PyYAML is untyped here
            line = event.start_mark.line + 1
            if isinstance(event, yaml.CollectionStartEvent):
                count += 1
                if len(open_nodes) >= MAX_DEPTH:
                    raise _refuse(
                        path, line, "", f"nested more than {MAX_DEPTH} levels deep; flatten it"
                    )
                open_nodes.append((event.anchor, count))
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, start = open_nodes.pop()
                if anchor is not None:
                    sizes[anchor] = count - start + 1
                    open_anchors.discard(anchor)
            elif isinstance(event, yaml.ScalarEvent):
                count += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:
                    raise _refuse(
                        path, line, "", f"the alias *{event.anchor} refers to a node containing it"
                    )
                count += sizes.get(event.anchor or "", 1)  # an unknown anchor fails when composed
            if count > MAX_NODES:
                raise _refuse(
                    path,
                    line,
                    "",
                    f"the document stands for more than {MAX_NODES:,} values once its aliases "
                    "(*name) are expanded; use fewer aliases",
                )
    finally:
        loader.dispose()


def _walk(node: yaml.Node, loc: Loc, out: dict[Loc, int], problems: list[Problem]) -> None:
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            out[(*loc, key)] = key_node.start_mark.line + 1
            _walk(key_node, (*loc, key), {}, problems)  # a key may be a long integer too
            _walk(value_node, (*loc, key), out, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*loc, index), out, problems)
    elif node.tag == _INT_TAG and len(str(node.value)) > _MAX_INT_DIGITS:
        problems.append(
            Problem(
                None,
                node.start_mark.line + 1,
                field_text(loc),
                f"the integer {str(node.value)[:20]}... has {len(str(node.value)):,} digits; "
                f"integers must be within ±{MAX_INT:,} (quote it to make it text)",
            )
        )


def _digits(value: int) -> str:
    """A huge integer shortened for a message (Python will not print one past 4,300 digits)."""
    try:
        text = str(value)
    except ValueError:
        return f"of about {int(value.bit_length() * 0.30103):,} digits"
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text):,} digits)"


def number_problems(data: Any, source: SourceMap, loc: Loc = ()) -> list[Problem]:
    """Integers beyond :data:`MAX_INT` and floats that are NaN or infinite, each with its line.

    Run on the document as read and again on every rendering of it, since a template
    (``{{ 10 ** 100 }}``) can compute a number the file does not spell out.
    """
    problems: list[Problem] = []
    stack: list[tuple[Loc, Any]] = [(loc, data)]
    while stack:
        where, value = stack.pop()
        message = None
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and abs(value) > MAX_INT:
            message = f"the integer {_digits(value)} is beyond ±{MAX_INT:,}; use a smaller number"
        elif isinstance(value, float) and not math.isfinite(value):
            message = f"{value} is not a finite number; give a finite one"
        elif isinstance(value, dict):
            stack.extend(((*where, str(k)), v) for k, v in value.items())
            stack.extend(((*where, str(k)), k) for k in value if not isinstance(k, str))
        elif isinstance(value, list):
            stack.extend(((*where, i), v) for i, v in enumerate(value))
        if message is not None:
            problems.append(Problem(source.file, source.line_of(where), field_text(where), message))
    return sorted(problems, key=lambda p: (p.line or 0, p.field))


def _load_yaml(path: Path, text: str, lines: dict[Loc, int]) -> Any:
    _check_events(path, text)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problems: list[Problem] = []
        _walk(node, (), lines, problems)
        if problems:
            raise SpecError([Problem(path, p.line, p.field, p.message) for p in problems])
        return loader.construct_document(node)
    finally:
        loader.dispose()


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class _BadJSONNumber(ValueError):
    def __init__(self, literal: str, message: str) -> None:
        super().__init__(message)
        self.literal = literal


def _load_json(path: Path, text: str) -> Any:
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                raise _refuse(path, line, "", f"nested more than {MAX_DEPTH} levels deep")
        elif token in "]}":
            depth -= 1

    def parse_int(literal: str) -> int:
        if len(literal) > _MAX_INT_DIGITS:
            raise _BadJSONNumber(
                literal,
                f"an integer of {len(literal):,} digits is beyond ±{MAX_INT:,}; use a smaller one",
            )
        return int(literal)

    def parse_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise _BadJSONNumber(
                literal, f"{literal[:20]} is not a finite number; give a finite one"
            )
        return value

    def parse_constant(literal: str) -> float:
        raise _BadJSONNumber(literal, f"{literal} is not a finite number; give a finite one")

    try:
        return json.loads(
            text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant
        )
    except _BadJSONNumber as exc:
        found = text.find(exc.literal)
        where = text.count("\n", 0, found) + 1 if found >= 0 else None
        raise _refuse(path, where, "", str(exc)) from None
    except RecursionError:
        raise _refuse(path, None, "", f"nested more than {MAX_DEPTH} levels deep") from None


def _json_lines(text: str) -> dict[Loc, int]:
    """The lines of a JSON document's fields, read by the YAML parser (JSON is nearly YAML).

    Called only once the JSON parsed within bounds; where the YAML parser reads the
    text differently (tabs, say), the problems simply have no line.
    """
    lines: dict[Loc, int] = {}
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _walk(node, (), lines, [])
    except yaml.YAMLError:
        return {}
    finally:
        loader.dispose()
    return lines


def load_document(path: Path) -> tuple[Any, SourceMap]:
    """Parse a YAML or JSON file into plain data and a map of line numbers, within bounds.

    Raises:
        SpecError: the file cannot be read, is not valid YAML/JSON, or passes a bound
            (size, depth, expanded nodes, number range).
    """
    text = _read_text(path)
    lines: dict[Loc, int] = {}
    try:
        if path.suffix == ".json":
            data = _load_json(path, text)
            lines = _json_lines(text)
        else:
            data = _load_yaml(path, text, lines)
    except json.JSONDecodeError as exc:
        raise _refuse(path, exc.lineno, "", f"invalid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise _refuse(
            path, line, "", f"invalid YAML: {reason}; check indentation and quoting"
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a constructor's last word
        raise _refuse(path, None, "", f"cannot read the document: {exc}") from None
    source = SourceMap(path, lines)
    problems = number_problems(data, source)
    if problems:
        raise SpecError(problems)
    return data, source
