"""The viewer's Starlette application: pages, JSON API and the static assets."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import _api, _export, _leaderboard, _pages
from ._catalog import RunCatalog

STATIC = Path(__file__).parent / "static"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]", "::1"]
SECURITY_HEADERS = [
    # Agent output is untrusted: no inline script, nothing from elsewhere.
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; "
        b"img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    """ASGI middleware that adds :data:`SECURITY_HEADERS` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):  # no route: answer in the kind the client expects
        exc = _api.ApiError(exc.status_code, f"no such page: {request.url.path}")
    if request.url.path.startswith("/api/"):
        return await _api.api_error(request, exc)
    return await _pages.page_error(request, exc)


def create_app(runs_dir: Path, *, allowed_hosts: list[str] | None = None) -> Starlette:
    """The viewer over the run directories in ``runs_dir``.

    Args:
        runs_dir: A folder of run directories (or one run directory).
        allowed_hosts: Host headers to answer; defaults to loopback names, which
            keeps other web pages from reaching the viewer by DNS rebinding.
    """
    app = Starlette(
        routes=[
            *_pages.ROUTES,
            *_api.ROUTES,
            *_export.ROUTES,
            *_leaderboard.ROUTES,
            Mount("/static", StaticFiles(directory=STATIC)),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or LOOPBACK_HOSTS),
        ],
        exception_handlers={_api.ApiError: _error, 404: _error, 405: _error},
    )
    app.state.catalog = RunCatalog(runs_dir)
    _pages.compile_templates()
    return app
