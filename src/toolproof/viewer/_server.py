"""Serving the viewer: in the foreground (``toolproof view``) or in a thread (tests, benchmarks).

The viewer serves first and loads the rest later: its first page (the run page, the
first rows of the episode table, the stored overview) needs only the web framework and
the run's SQLite rows, so the record models, metrics and exporters (most of toolproof's
import time) are imported by :func:`warm` in a background thread once the server has
been up for :data:`WARM_AFTER_S`, or by whichever request needs them first.
"""

from __future__ import annotations

import importlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from ._app import LOOPBACK_HOSTS, create_app

WARM_AFTER_S = 1.0
"""Seconds after the server starts before :func:`warm` imports the rest: the first page
is served without competing with it for the interpreter."""
DEFERRED = (
    "toolproof.results.record",
    "toolproof.metrics",
    "toolproof.metrics.failures",
    "toolproof.metrics.compare",
    "toolproof.metrics.leaderboard",
    "toolproof.viewer._episode",
    "toolproof.export",
)
"""What the viewer's later pages import on first use (episode replay, computed overviews,
comparison, leaderboard, downloads), in the order :func:`warm` loads them."""


def warm(modules: tuple[str, ...] = DEFERRED) -> None:
    """Import the modules the first page did not need, so that later pages do not wait.

    A module that fails to import is left to the request that needs it, which reports
    the error where it belongs (an export format's missing extra, say).
    """
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # reported by the request that needs it
            continue


def _warm_later(server: uvicorn.Server, delay_s: float = WARM_AFTER_S) -> threading.Thread:
    """Start :func:`warm` in a daemon thread once ``server`` is up and ``delay_s`` passed."""

    def run() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        time.sleep(delay_s)
        if not server.should_exit:
            warm()

    thread = threading.Thread(target=run, name="toolproof-viewer-warm", daemon=True)
    thread.start()
    return thread


def _config(
    runs_dir: Path, host: str, port: int, allowed_hosts: list[str] | None
) -> uvicorn.Config:
    app = create_app(runs_dir, allowed_hosts=allowed_hosts)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )


def serve(runs_dir: Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the viewer until interrupted.

    On a non-loopback ``host`` every Host header is accepted, since the viewer
    cannot know the names it is reached by; the runs are then readable by anyone
    who can reach the port.
    """
    allowed = LOOPBACK_HOSTS if host in ("127.0.0.1", "localhost") else ["*"]
    server = uvicorn.Server(_config(runs_dir, host, port, allowed))
    _warm_later(server)
    server.run()


@contextmanager
def running_viewer(
    runs_dir: Path, *, startup_timeout: float = 60.0, warm_after_s: float | None = WARM_AFTER_S
) -> Iterator[str]:
    """Run the viewer on a free loopback port in a thread; yield its base URL.

    The server is stopped, its thread joined and its socket closed on exit. With
    ``warm_after_s`` None nothing is imported ahead of the requests (:func:`warm`).

    Raises:
        RuntimeError: the server did not start within ``startup_timeout`` seconds.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(_config(runs_dir, "127.0.0.1", port, None))
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="toolproof-viewer", daemon=True
        )
        thread.start()
        if warm_after_s is not None:
            _warm_later(server, warm_after_s)
        try:
            deadline = time.monotonic() + startup_timeout
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError("the viewer did not start")
                time.sleep(0.02)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(timeout=30)
    finally:
        sock.close()
