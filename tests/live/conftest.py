"""The loopback stand-in service of the live tests (see :mod:`upstream`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .upstream import Upstream, handler


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    """A stand-in service on 127.0.0.1 for the test's length."""
    up = Upstream(ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler))
    up.server.RequestHandlerClass = handler(up)
    thread = threading.Thread(target=up.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield up
    up.server.shutdown()
    up.server.server_close()
