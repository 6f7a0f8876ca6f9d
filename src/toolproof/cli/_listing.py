"""What ``toolproof list`` prints without a suite, made cheap to start.

Two things used to make ``toolproof list`` slow: loading every built-in suite (now
:func:`toolproof.spec.index.suite_infos`) and importing every agent and tool module
to read their registries (about a second). The registries' contents (agent kinds,
toolkit to tool names) depend only on the code, so they are kept beside the suite
index under a fingerprint of every file of the installed ``toolproof`` package
(:func:`toolproof.spec.index.tree_fingerprint`), and used only when

* the fingerprint computed now equals the stored one, and
* neither registry is loaded in this process (a plug-in that registers an agent or a
  tool imports them, and then the live registries, plug-ins included, are used).

Tables are plain text wrapped by word at the terminal width (no ``rich``: importing it
costs more than the rest of the command).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_REGISTRY_MODULES = ("toolproof.agents", "toolproof.tools")


def registries(cache_file: Path | None) -> tuple[list[str], dict[str, list[str]]]:
    """Agent kinds and toolkit to tool names: from the cache where it is current and the
    registries are not loaded, else from the registries (and the cache is rewritten)."""
    from toolproof.spec.index import tree_fingerprint

    loaded = any(name in sys.modules for name in _REGISTRY_MODULES)
    if cache_file is None or loaded:
        return _live()
    fingerprint = tree_fingerprint(Path(__file__).resolve().parents[1], skip=("suites",))
    cached = _read(cache_file, fingerprint)
    if cached is not None:
        return cached
    kinds, kits = _live()
    _write(cache_file, {"fingerprint": fingerprint, "agents": kinds, "toolkits": kits})
    return kinds, kits


def _live() -> tuple[list[str], dict[str, list[str]]]:
    from toolproof.agents import agent_kinds
    from toolproof.tools import toolkits

    return agent_kinds(), toolkits()


def _is_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _read(path: Path, fingerprint: str) -> tuple[list[str], dict[str, list[str]]] | None:
    """The cached registries if the file is ours, well formed and of this fingerprint."""
    try:
        if path.stat().st_size > 1024 * 1024:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return None
    kinds, kits = data.get("agents"), data.get("toolkits")
    if not isinstance(kinds, list) or not _is_names(kinds) or not isinstance(kits, dict):
        return None
    if not all(isinstance(k, str) and _is_names(v) for k, v in kits.items()):
        return None
    return list(kinds), {str(k): list(v) for k, v in kits.items()}


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temporary file, then rename); a cache that cannot be written is
    skipped, it only saves time."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # e.g. the folder is a file: no tmp was made
            tmp.unlink(missing_ok=True)


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Rows under a header, columns padded; the last column wrapped by word (never cut)
    to the terminal width (``COLUMNS`` when set)."""
    width = shutil.get_terminal_size((100, 24)).columns
    cells = [header, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
    indent = sum(w + 2 for w in widths) + 1
    room = max(20, width - indent - 1)
    lines: list[str] = []
    for row in cells:
        lead = " " + "".join(cell.ljust(w + 2) for cell, w in zip(row, widths, strict=False))
        wrapped = textwrap.wrap(row[-1], room, break_long_words=False, break_on_hyphens=False) or [
            ""
        ]
        lines.append((lead + wrapped[0]).rstrip())
        lines.extend((" " * indent + part).rstrip() for part in wrapped[1:])
    return "\n".join(lines)


def wrap(text: str, indent: str = "  ") -> str:
    """``text`` wrapped by word at the terminal width, continuation lines indented."""
    width = shutil.get_terminal_size((100, 24)).columns
    return textwrap.fill(
        text,
        max(20, width - 1),
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
