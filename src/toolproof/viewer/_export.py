"""Downloads of a run in the export formats (``toolproof export``, from the viewer).

::

    GET /api/runs/{run}/export/{format}     inspect | otel | csv | parquet | junit

The file is written by :func:`toolproof.export.export_run` on a worker thread into a
temporary file (the exporters stream, so memory stays flat at any run size), then sent as
an attachment named as ``toolproof export`` would name it, and deleted.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Route

from ._api import ApiError, run_path


def _write(run_dir: Path, fmt: str) -> Path:
    from toolproof.export import export_run

    handle, name = tempfile.mkstemp(prefix="toolproof-export-")
    path = Path(name)
    try:
        with os.fdopen(handle, "wb") as fh:
            export_run(run_dir, fmt, fh)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


async def download(request: Request) -> FileResponse:
    """One run in one export format, as a file download.

    Raises:
        ApiError: 404 for an unknown run or format; 501 when the format needs a package
            that is not installed (the message names the extra).
    """
    # The exporters load on the first download, not at the viewer's start (the first page
    # needs none of them).
    from toolproof.export import FORMATS, ExportError, default_name

    run_dir = run_path(request, request.path_params["run"])
    fmt = request.path_params["format"]
    if fmt not in FORMATS:
        raise ApiError(404, f"no export format {fmt!r}; valid: {', '.join(sorted(FORMATS))}")
    try:
        path = await run_in_threadpool(_write, run_dir, fmt)
    except ExportError as exc:
        raise ApiError(501, str(exc)) from None
    return FileResponse(
        path,
        media_type=FORMATS[fmt].media_type,
        filename=default_name(run_dir, fmt),
        background=BackgroundTask(_remove, path),
        headers={"Cache-Control": "no-store"},
    )


ROUTES = [Route("/api/runs/{run}/export/{format}", download)]
