"""File tools for workspace worlds. Every path is confined to ``/workspace``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from toolproof.trajectory import ToolKind
from toolproof.worlds import PathEscapeError, Workspace

from ..base import ToolContext, ToolError, tool

MAX_READ_BYTES = 200_000


def _workspace(ctx: ToolContext) -> Workspace:
    if ctx.world.workspace is None:
        raise ToolError("this task has no workspace; file tools are not available")
    return ctx.world.workspace


def _resolve(ctx: ToolContext, path: str, *, must_exist: bool = False) -> tuple[Workspace, Path]:
    ws = _workspace(ctx)
    try:
        return ws, ws.resolve(path, must_exist=must_exist)
    except PathEscapeError as exc:
        raise ToolError(str(exc), kind="policy_violation") from None
    except FileNotFoundError as exc:
        raise ToolError(str(exc)) from None
    except ValueError as exc:  # e.g. an embedded null byte
        raise ToolError(f"invalid path {path!r}: {exc}") from None


P = ParamSpec("P")
R = TypeVar("R")


def _os_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Report an OS error the agent's path caused (a file where a directory must be, a name
    too long) as a tool error naming the path as the agent wrote it, not as a harness crash."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except OSError as exc:
            raise ToolError(f"{kwargs.get('path', '')}: {exc.strerror or exc}") from None

    return wrapper


@tool(kind=ToolKind.READ)
@_os_errors
def list_files(ctx: ToolContext, path: str = "/workspace", recursive: bool = False) -> list[str]:
    """List the files and directories at a path (directories end with '/').

    Args:
        path: Directory to list, e.g. "/workspace/data".
        recursive: List everything below the directory, not just its children.
    """
    ws, target = _resolve(ctx, path, must_exist=True)
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory")
    items = target.rglob("*") if recursive else target.iterdir()
    out = []
    for item in sorted(items):
        rel = item.relative_to(ws.root).as_posix()
        out.append(ws.virtual(rel) + ("/" if item.is_dir() else ""))
    return out


@tool(kind=ToolKind.READ)
@_os_errors
def read_file(ctx: ToolContext, path: str) -> str:
    """Read a text file and return its content.

    Args:
        path: File to read, e.g. "/workspace/notes.txt".
    """
    _, target = _resolve(ctx, path, must_exist=True)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; use list_files")
    data = target.read_bytes()[:MAX_READ_BYTES]
    return data.decode("utf-8", errors="replace")


@tool(kind=ToolKind.WRITE)
@_os_errors
def create_file(ctx: ToolContext, path: str) -> str:
    """Create a new, empty file (and any missing parent directories).

    Args:
        path: File to create, e.g. "/workspace/data/hello.txt".
    """
    ws, target = _resolve(ctx, path)
    if target.exists():
        raise ToolError(f"{path} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch()
    return f"created {ws.virtual(target.relative_to(ws.root).as_posix())}"


@tool(kind=ToolKind.WRITE)
@_os_errors
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Write text to a file, replacing its content; creates the file if needed.

    Args:
        path: File to write, e.g. "/workspace/data/hello.txt".
        content: The full new content.
    """
    ws, target = _resolve(ctx, path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return (
        f"wrote {len(content)} characters to {ws.virtual(target.relative_to(ws.root).as_posix())}"
    )


@tool(kind=ToolKind.WRITE)
@_os_errors
def delete_file(ctx: ToolContext, path: str) -> str:
    """Delete a file.

    Args:
        path: File to delete.
    """
    _, target = _resolve(ctx, path, must_exist=True)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; only files can be deleted")
    target.unlink()
    return f"deleted {path}"


@tool(kind=ToolKind.READ)
@_os_errors
def search_files(ctx: ToolContext, text: str, path: str = "/workspace") -> list[dict[str, Any]]:
    """Find lines containing a text in every file under a directory.

    Args:
        text: Text to look for (case-sensitive).
        path: Directory to search, e.g. "/workspace/src".
    """
    ws, target = _resolve(ctx, path, must_exist=True)
    hits: list[dict[str, Any]] = []
    for file in sorted(p for p in target.rglob("*") if p.is_file()):
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(lines, 1):
            if text in line:
                rel = file.relative_to(ws.root).as_posix()
                hits.append({"path": ws.virtual(rel), "line": number, "text": line.strip()[:200]})
                if len(hits) >= 100:
                    return hits
    return hits
