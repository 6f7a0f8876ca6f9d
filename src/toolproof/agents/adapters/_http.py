"""The HTTP plumbing every provider client of the process shares: TLS, and a size cap.

Building a client's default TLS context loads the CA bundle, which costs tens of
milliseconds; a run makes one client per episode, so the context is made once
and shared (it is immutable once built and safe to share between clients).

The SDK clients (openai, anthropic) read a response body whole before toolproof
sees it; :func:`capped_transport` makes their transport stop reading a body at
:data:`MAX_RESPONSE_BYTES` (checked against the declared ``content-length`` first,
then as it streams), raising :class:`ReplyTooLarge`, an ``agent_error``: the model
is the agent under test. :func:`too_large` finds it under the SDK's own wrapping.
"""

from __future__ import annotations

import functools
import importlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""Bytes of one model response body (a turn within every turn limit fits easily)."""


class ReplyTooLarge(Exception):
    """A response body over :data:`MAX_RESPONSE_BYTES`: an agent_error, never retried."""


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The process-wide TLS context (the one httpx would build for each client)."""
    import httpx

    return httpx.create_ssl_context()


def _refusal(url: object, detail: str) -> ReplyTooLarge:
    return ReplyTooLarge(
        f"the response from {url} is {detail}, over the limit of {MAX_RESPONSE_BYTES:,} "
        "bytes for one turn (see docs/evaluate-your-agent.md, limits)"
    )


def capped_transport(client_class: type, limit: int = MAX_RESPONSE_BYTES) -> Any:
    """A transport (with the shared TLS context) for ``client_class`` that caps bodies.

    Args:
        client_class: The SDK's client class, e.g. ``openai.DefaultAsyncHttpxClient``; the
            transport is made with the httpx package it is built on (the anthropic SDK
            uses ``httpx2``, a fork with the same API).
        limit: The most bytes of a response body.
    """
    base = next(c for c in client_class.__mro__ if c.__name__ == "AsyncClient")
    httpx: Any = importlib.import_module(base.__module__.partition(".")[0])

    class CappedStream(httpx.AsyncByteStream):  # type: ignore[misc]  # httpx or httpx2: Any
        def __init__(self, inner: Any, url: object) -> None:
            self._inner = inner
            self._url = url

        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async for chunk in self._inner:
                size += len(chunk)
                if size > limit:
                    raise _refusal(self._url, f"more than {limit:,} bytes")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(httpx.AsyncHTTPTransport):  # type: ignore[misc]  # as above
        async def handle_async_request(self, request: Any) -> Any:
            response = await super().handle_async_request(request)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                await response.aclose()
                raise _refusal(request.url, f"{int(declared):,} bytes (its content-length)")
            stream = response.stream
            assert isinstance(stream, httpx.AsyncByteStream)
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                stream=CappedStream(stream, request.url),
                extensions=response.extensions,
                request=request,
            )

    return CappedTransport(verify=ssl_context())


def too_large(exc: BaseException) -> ReplyTooLarge | None:
    """The :class:`ReplyTooLarge` behind an SDK's exception (its cause or context), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplyTooLarge):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
