"""Serving the viewer: in the foreground (``toolproof view``) or in a thread (tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from ._app import LOOPBACK_HOSTS, create_app


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
    uvicorn.Server(_config(runs_dir, host, port, allowed)).run()


@contextmanager
def running_viewer(runs_dir: Path, *, startup_timeout: float = 60.0) -> Iterator[str]:
    """Run the viewer on a free loopback port in a thread; yield its base URL.

    The server is stopped, its thread joined and its socket closed on exit.

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
