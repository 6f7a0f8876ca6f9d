"""One TLS context for every provider client of the process.

Building a client's default TLS context loads the CA bundle, which costs tens of
milliseconds; a run makes one client per episode, so the context is made once
and shared (it is immutable once built and safe to share between clients).
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The process-wide TLS context (the one httpx would build for each client)."""
    import httpx

    return httpx.create_ssl_context()
