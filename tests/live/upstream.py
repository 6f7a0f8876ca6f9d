"""A real HTTP service on loopback standing in for the public APIs of live tasks.

Routes: ``/data`` JSON, ``/needs-key`` (401 without the right ``X-Api-Key``),
``/echo`` (returns the request's headers and query, as httpbin does: the place a
leaked secret would show), ``/to-evil`` and ``/to-data`` (302 off and on the
list), ``/big`` (a body over the limits), ``/mirror`` (the key it got, by header or
query, echoed in every encoding a real service might use: URL-encoded, base64, JSON
escapes, inside a Basic-auth blob) and ``/mirror-redirect`` (a 302 whose ``Location``
carries the key URL-encoded). Every request is counted, so a test can prove a refused
request never left the proxy.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

SECRET = "sk-live-7f3e9a1c55d2-do-not-leak"
HOST = "api.example.org"


@dataclass
class Upstream:
    """The running stand-in service."""

    server: ThreadingHTTPServer
    hits: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        """Its loopback port."""
        return int(self.server.server_address[1])

    def resolver(self, host: str, port: int) -> tuple[str, int]:
        """The test resolver: the allowlisted names map here."""
        return "127.0.0.1", self.port


def handler(upstream: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            upstream.hits.append(f"{self.command} {self.headers.get('Host')} {self.path}")
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            if parts.path == "/data":
                self._reply(200, {"value": "blue", "count": 3, "items": [{"name": "alpha"}]})
            elif parts.path == "/needs-key":
                if self.headers.get("X-Api-Key") != SECRET and query.get("key") != SECRET:
                    self._reply(401, {"error": "missing or wrong key"})
                else:
                    self._reply(200, {"value": "green", "auth_ok": True})
            elif parts.path == "/echo":
                self._reply(200, {"headers": dict(self.headers.items()), "query": query})
            elif parts.path == "/to-evil":
                self._reply(302, {}, {"Location": "http://evil.example.net/steal"})
            elif parts.path == "/to-data":
                self._reply(302, {}, {"Location": "/data"})
            elif parts.path == "/mirror":
                key = query.get("key") or self.headers.get("X-Api-Key") or ""
                self._reply(200, mirror(self.path, key))
            elif parts.path == "/mirror-redirect":
                key = query.get("key") or self.headers.get("X-Api-Key") or ""
                self._reply(302, {}, {"Location": f"/data?seen={quote(key, safe='')}"})
            elif parts.path == "/mirror-gzip":  # compresses, though asked not to
                key = query.get("key") or self.headers.get("X-Api-Key") or ""
                data = gzip.compress(json.dumps(mirror(self.path, key)).encode())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif parts.path == "/big":
                self._reply(200, {"blob": "x" * 5000})
            else:
                self._reply(404, {"error": "no route"})

        do_POST = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    return Handler


def mirror(path: str, key: str) -> dict[str, str]:
    """A key echoed the ways real services echo what they got (JSON-encoded on the way out:
    non-ASCII characters become ``\\uXXXX`` escapes)."""
    raw = key.encode("utf-8")
    return {
        "path": path,
        "raw": key,
        "quoted": quote(key, safe=""),
        "quoted_lower": quote(key, safe="").lower(),
        "plus": quote_plus(key),
        "b64": base64.b64encode(raw).decode(),
        "b64url_bare": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "basic": base64.b64encode(b"user:" + raw).decode(),
        "in_blob": base64.b64encode(b"{" + raw + b"}").decode(),
    }
