"""The concurrency limit of the process's gateway, kept apart from the server.

``limit_shared`` (in the package) may be called before the server module is imported (a
run that calls no model never imports it); the server reads the limit from here when it
makes the gateway. A module below both, so neither imports the other for it.
"""

from __future__ import annotations

__all__ = ["shared_limit"]

#: ``--max-model-calls`` of the process's gateway, given to it when ``shared()`` makes it.
shared_limit: list[int | None] = [None]
