"""File tools for workspace worlds. Every path is confined to ``/workspace``.

The workspace is the agent's: it may hold links, FIFOs, sockets, device nodes, names
that are not UTF-8 and millions of entries. So the tools never follow a symbolic
link (at any component of a path), open only regular files and directories (never
blocking: every open is ``O_NONBLOCK``), cap what they read, bound every walk in
entries, depth and time, and run in a worker thread under the gateway's timeout
(``blocking=True``). A refusal is an error result for the agent, never a crash.
What the harness writes is given to the sandbox's user (see ``Workspace.owner``).
"""

from __future__ import annotations

import functools
import posixpath
import stat
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from toolproof.trajectory import ToolKind
from toolproof.worlds import (
    VIRTUAL_ROOT,
    LinkError,
    PathEscapeError,
    SpecialFileError,
    WalkBudget,
    Workspace,
    shown,
)

from ..base import ToolContext, ToolError, tool

MAX_READ_BYTES = 200_000
"""read_file returns at most this much of a file."""
MAX_LIST_ENTRIES = 5_000
"""list_files returns at most this many entries."""
MAX_SEARCH_FILE_BYTES = 2_000_000
"""search_files skips files larger than this."""
MAX_SEARCH_ENTRIES = 50_000
"""search_files looks at no more entries than this."""
MAX_SEARCH_TOTAL_BYTES = 50_000_000
"""search_files reads no more than this in all."""
MAX_SEARCH_HITS = 100
WALK_SECONDS = 10.0
"""No walk of a tool takes longer (the gateway's timeout is the outer bound)."""


def _workspace(ctx: ToolContext) -> Workspace:
    if ctx.world.workspace is None:
        raise ToolError("this task has no workspace; file tools are not available")
    return ctx.world.workspace


def _parts(ws: Workspace, path: str) -> list[bytes]:
    try:
        return ws.parts(path)
    except PathEscapeError as exc:
        raise ToolError(str(exc), kind="policy_violation") from None
    except ValueError as exc:
        raise ToolError(f"invalid path {shown(path)!r}: {exc}") from None


def _link_refusal(ws: Workspace, path: str, exc: LinkError) -> ToolError:
    """The error for a path through a link: a policy violation when the link leads out."""
    where = ws.virtual(exc.where)
    target = shown(exc.target)
    if exc.target.startswith(b"/"):
        inside = target == VIRTUAL_ROOT or target.startswith(VIRTUAL_ROOT + "/")
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(where), target))
        inside = joined == VIRTUAL_ROOT or joined.startswith(VIRTUAL_ROOT + "/")
    message = (
        f"{shown(path)}: {where} is a symbolic link (to {target!r}); the file tools never "
        "follow links, use the path it points to"
    )
    if not inside:
        message = f"{shown(path)}: {where} is a symbolic link that leads outside the workspace"
    return ToolError(message, kind="tool_error" if inside else "policy_violation")


P = ParamSpec("P")
R = TypeVar("R")


def _refusals(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn what the workspace refused (a link, a FIFO, a missing file, a name too long)
    into a tool error naming the path as the agent wrote it, never a harness crash."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        path = str(kwargs.get("path", VIRTUAL_ROOT))
        try:
            return fn(*args, **kwargs)
        except LinkError as exc:
            ctx = args[0]
            assert isinstance(ctx, ToolContext)
            raise _link_refusal(_workspace(ctx), path, exc) from None
        except SpecialFileError as exc:
            raise ToolError(
                f"{shown(path)} is {exc.kind}; the file tools only open regular files and "
                "directories"
            ) from None
        except FileNotFoundError:
            raise ToolError(f"no such file or directory: {shown(path)}") from None
        except IsADirectoryError:
            raise ToolError(f"{shown(path)} is a directory; use list_files") from None
        except NotADirectoryError:
            raise ToolError(f"{shown(path)} is not a directory (or a part of it is not)") from None
        except FileExistsError:
            raise ToolError(f"{shown(path)} already exists") from None
        except OSError as exc:
            raise ToolError(f"{shown(path)}: {exc.strerror or exc}") from None

    return wrapper


def _budget(max_entries: int, max_depth: int = 64, *, shallow: bool = False) -> WalkBudget:
    return WalkBudget(
        max_entries=max_entries, max_depth=max_depth, max_seconds=WALK_SECONDS, shallow=shallow
    )


@tool(kind=ToolKind.READ, blocking=True)
@_refusals
def list_files(ctx: ToolContext, path: str = "/workspace", recursive: bool = False) -> list[str]:
    """List the files and directories at a path (directories end with '/').

    Symbolic links are listed as they are and never followed.

    Args:
        path: Directory to list, e.g. "/workspace/data".
        recursive: List everything below the directory, not just its children.
    """
    ws = _workspace(ctx)
    parts = _parts(ws, path)
    budget = _budget(MAX_LIST_ENTRIES, 64 if recursive else 1, shallow=not recursive)
    items = ws.listdir(parts, budget)
    items.sort(key=lambda item: item.parts)
    out = [ws.virtual(i.parts) + ("/" if stat.S_ISDIR(i.mode) else "") for i in items]
    if budget.stopped is not None:
        out.append(f"[listing stopped: {budget.stopped}; list a smaller directory]")
    return out


@tool(kind=ToolKind.READ, blocking=True)
@_refusals
def read_file(ctx: ToolContext, path: str) -> str:
    """Read a text file and return its content (at most the first 200,000 bytes).

    Args:
        path: File to read, e.g. "/workspace/notes.txt".
    """
    ws = _workspace(ctx)
    data = ws.read_bytes(_parts(ws, path), MAX_READ_BYTES)
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_READ_BYTES:
        text += f"\n[... cut at {MAX_READ_BYTES} bytes; the file is longer]"
    return text


@tool(kind=ToolKind.WRITE, blocking=True)
@_refusals
def create_file(ctx: ToolContext, path: str) -> str:
    """Create a new, empty file (and any missing parent directories).

    Args:
        path: File to create, e.g. "/workspace/data/hello.txt".
    """
    ws = _workspace(ctx)
    parts = _parts(ws, path)
    ws.write_bytes(parts, b"", exclusive=True)
    return f"created {ws.virtual(parts)}"


@tool(kind=ToolKind.WRITE, blocking=True)
@_refusals
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Write text to a file, replacing its content; creates the file if needed.

    Args:
        path: File to write, e.g. "/workspace/data/hello.txt".
        content: The full new content.
    """
    ws = _workspace(ctx)
    parts = _parts(ws, path)
    ws.write_bytes(parts, content.encode("utf-8", errors="surrogateescape"))
    return f"wrote {len(content)} characters to {ws.virtual(parts)}"


@tool(kind=ToolKind.WRITE, blocking=True)
@_refusals
def delete_file(ctx: ToolContext, path: str) -> str:
    """Delete a file (a symbolic link is removed itself, never what it points to).

    Args:
        path: File to delete.
    """
    ws = _workspace(ctx)
    parts = _parts(ws, path)
    try:
        ws.delete(parts)
    except IsADirectoryError:
        raise ToolError(f"{shown(path)} is a directory; only files can be deleted") from None
    return f"deleted {ws.virtual(parts)}"


@tool(kind=ToolKind.READ, blocking=True)
@_refusals
def search_files(ctx: ToolContext, text: str, path: str = "/workspace") -> list[dict[str, Any]]:
    """Find lines containing a text in every file under a directory.

    Only regular UTF-8 text files up to 2 MB are searched; links are not followed.
    At most 100 hits are returned.

    Args:
        text: Text to look for (case-sensitive).
        path: Directory to search, e.g. "/workspace/src".
    """
    ws = _workspace(ctx)
    hits: list[dict[str, Any]] = []
    if not text:
        raise ToolError("text must not be empty")
    budget = _budget(MAX_SEARCH_ENTRIES)
    total = 0
    for file, data in ws.walk_files(_parts(ws, path), budget, MAX_SEARCH_FILE_BYTES):
        total += len(data)
        if len(data) > MAX_SEARCH_FILE_BYTES:  # grew since it was listed
            continue
        if total > MAX_SEARCH_TOTAL_BYTES:
            budget.stopped = f"more than {MAX_SEARCH_TOTAL_BYTES} bytes read"
            break
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            if text in line:
                hits.append({"path": ws.virtual(file), "line": number, "text": line.strip()[:200]})
                if len(hits) >= MAX_SEARCH_HITS:
                    return hits
    if budget.stopped is not None:
        hits.append({"note": f"search stopped: {budget.stopped}; search a smaller directory"})
    return hits
