"""The egress proxy: the one way out for live tools, on loopback, for the length of a run.

A client (the ``live`` toolkit) sends an HTTP/1.1 request in absolute form
(``GET https://host/path``) with three harness headers: the run's token, the
task id and the episode key. The proxy checks the task's allowlist and limits,
then either forwards the request (``record``: secrets injected, the exchange
stored scrubbed) or answers from the cassette (``replay``). Its own answers
carry ``X-Toolproof-Proxy``: ``refused`` (the agent sees why), ``unrecorded`` (a
replay miss: the agent asked for something the cassettes do not hold) or ``infra``
(an allowlisted service that could not be reached: not the agent's fault).

    tool ──▶ proxy ─┬─ allowlist, limits, URL, body ──▶ refused (400/403/405/413/414/429)
                    ├─ replay: cassette ──▶ hit | unrecorded (404, naming the request)
                    └─ record: upstream (secrets in) ──▶ scrub ──▶ cassette + answer
                                                     └─▶ unreachable ──▶ infra (502)

Who is to blame (ARCHITECTURE.md, invariant 8) is decided here, once: whatever the agent
chose (the URL, its bytes and length, the method, the body, how often it asks, a URL the
cassettes do not hold) is answered ``refused`` or ``unrecorded`` and becomes a
:class:`~toolproof.tools.ToolError` the agent sees, so the episode is scored. Only a
failure the proxy itself witnessed on the way to an allowlisted service for a well-formed
request (no connection, a timeout, a broken reply) is ``infra``: the episode is retried and
kept out of the score. What the agent gets back is scrubbed of the task's secrets in every
encoding (:mod:`._scrub`).
"""

from __future__ import annotations

import http.client
import secrets as _secrets
import socket
import ssl
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from toolproof.spec.live import LiveSpec
from toolproof.trajectory import ingress

from ._cassette import Cassette, Recorded, normalise_url, request_key
from ._policy import Limits, Refused, Target, check_url, public_address
from ._scrub import Scrubber

Mode = Literal["record", "replay"]
Resolver = Callable[[str, int], tuple[str, int]]
"""Test hook: map an allowed (host, port) to the address to connect to."""

TOKEN_HEADER = "x-toolproof-token"
TASK_HEADER = "x-toolproof-task"
EPISODE_HEADER = "x-toolproof-episode"
VERDICT_HEADER = "X-Toolproof-Proxy"
REDACTED = "<redacted>"
_HOP = {
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",  # the proxy asks for identity: a compressed body could hide a secret
}
MAX_BODY = 16 * 1024 * 1024
"""Largest request body the proxy reads at all (the per-task limit is checked after)."""
MAX_URL_CHARS = 8192
"""Longest request URL accepted (and recorded); longer ones are refused with 414."""
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
"""Characters kept as they are in a forwarded path; anything else is percent-encoded."""
_KEEP_RESPONSE = ("content-type", "location", "retry-after", "etag", "last-modified")


@dataclass
class TaskAccess:
    """One task's allowlist and the values of its secrets."""

    spec: LiveSpec
    secrets: dict[str, str]
    _scrubber: Scrubber | None = None

    def scrub(self, data: bytes) -> bytes:
        """Replace every secret value in ``data`` with ``<redacted>``: raw, URL-encoded,
        JSON-escaped or base64-encoded (see :mod:`toolproof.live._scrub`)."""
        if self._scrubber is None:
            self._scrubber = Scrubber(self.secrets.values())
        return self._scrubber(data)

    def scrub_text(self, text: str) -> str:
        """Like :meth:`scrub`, for text (a header value, a message)."""
        return self.scrub(text.encode("utf-8", "surrogateescape")).decode(
            "utf-8", "surrogateescape"
        )

    def secret_params(self) -> frozenset[str]:
        """Query parameter names that carry secrets (dropped from matching keys)."""
        return frozenset(s.query for s in self.spec.secrets if s.query)


class EgressProxy:
    """A forward HTTP proxy on 127.0.0.1 that enforces allowlists and records or replays.

    Args:
        access: Each live task's allowlist and secrets, by task id.
        mode: ``record`` calls the real services; ``replay`` answers from ``cassette``.
        cassette: The cassette replayed from, or recorded into.
        record_to: Where a recording is saved (on :meth:`close`, and after each exchange).
        resolver: Test hook that maps an allowed host to a loopback server; None
            resolves with DNS and refuses non-public addresses.
        timeout_s: Upstream connect and read timeout.
    """

    def __init__(
        self,
        access: Mapping[str, TaskAccess],
        *,
        mode: Mode,
        cassette: Cassette | None = None,
        record_to: Path | None = None,
        resolver: Resolver | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.access = dict(access)
        self.mode = mode
        self.cassette = cassette or Cassette()
        self.record_to = record_to
        self.resolver = resolver
        self.timeout_s = timeout_s
        self.token = _secrets.token_hex(16)
        self.limits = Limits()
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` of the running proxy."""
        assert self._server is not None, "the proxy is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> EgressProxy:
        """Listen on a free loopback port and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="toolproof-egress", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and save a recording (nothing to do for one never started)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        if self.mode == "record" and self.record_to is not None:
            self.cassette.save(self.record_to)

    def __enter__(self) -> EgressProxy:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def handle(
        self, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """Decide one request (called by the handler thread).

        Returns:
            The status, headers and body to send back to the client.
        """
        if not _secrets.compare_digest(headers.get(TOKEN_HEADER, ""), self.token):
            return _answer(407, "refused", "this proxy serves toolproof's live tools only")
        task = headers.get(TASK_HEADER, "")
        access = self.access.get(task)
        if access is None:
            return _answer(403, "refused", f"task {task!r} is not a live task of this run")
        try:
            url = _checked_url(url)
            target = check_url(url, method, access.spec)
            if len(body) > access.spec.max_request_bytes:
                raise Refused(
                    f"request body of {len(body)} bytes is over the limit of "
                    f"{access.spec.max_request_bytes}",
                    413,
                )
            self.limits.take(f"{task}/{headers.get(EPISODE_HEADER, '')}", access.spec)
        except Refused as exc:
            self._note(method, url[:MAX_URL_CHARS], f"refused: {exc}")
            return _answer(exc.status, "refused", str(exc))
        shown = normalise_url(url, access.secret_params())
        key = request_key(method, shown, body)
        if self.mode == "replay":
            found = self.cassette.lookup(key)
            if found is None:  # the agent asked for what was never recorded: its request
                files = ", ".join(str(f) for f in self.cassette.files) or "none"
                self._note(method, shown, f"replay miss (not in the cassettes: {files})")
                return _answer(
                    404,
                    "unrecorded",
                    f"replay miss: {method.upper()} {shown} (body sha256 "
                    f"{key.rsplit(' ', 1)[1]}) was not recorded: this run replays recorded "
                    "exchanges only, and the service's answer to this request is unknown. "
                    "Ask for a URL the task needs (to record new requests, a person runs "
                    "--live record where the service is reachable)",
                )
            response = found
        else:
            try:
                response = self._forward(method, url, target, headers, body, access)
            except Refused as exc:
                # 502: a listed host that does not resolve, an outage the proxy witnessed
                verdict = "infra" if exc.status == 502 else "refused"
                self._note(method, shown, f"{verdict}: {exc}")
                return _answer(exc.status, verdict, access.scrub_text(str(exc)))
            except (OSError, http.client.HTTPException) as exc:  # witnessed by the proxy
                self._note(method, shown, "upstream failed")
                text = f"{method.upper()} {shown} failed: {type(exc).__name__}: {exc}"
                return _answer(502, "infra", access.scrub_text(text))
            self.cassette.add(method, shown, body, response)
        if len(response.body) > access.spec.max_response_bytes:
            self._note(method, shown, "response too large")
            return _answer(
                502,
                "refused",
                f"the response is over the limit of {access.spec.max_response_bytes} bytes",
            )
        self._note(method, shown, str(response.status))
        return response.status, dict(response.headers), response.body

    def _note(self, method: str, url: str, outcome: str) -> None:
        with self._lock:
            self.log.append({"method": method.upper(), "url": url, "outcome": outcome})

    def _forward(
        self,
        method: str,
        url: str,
        target: Target,
        headers: dict[str, str],
        body: bytes,
        access: TaskAccess,
    ) -> Recorded:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        out = {
            k: v for k, v in headers.items() if k not in _HOP and not k.startswith("x-toolproof-")
        }
        for secret in access.spec.secrets:
            if secret.host.lower() != target.host:
                continue
            value = secret.prefix + access.secrets[secret.env]
            if secret.header:
                out = {k: v for k, v in out.items() if k != secret.header.lower()}
                out[secret.header] = value
            elif secret.query:
                query = [(k, v) for k, v in query if k != secret.query] + [(secret.query, value)]
        # The request line arrived as latin-1 text: its bytes, percent-encoded where a request
        # line may not hold them (an agent's odd bytes are sent as %XX, never refused upstream).
        raw_path = (parts.path or "/").encode("latin-1", "replace")
        path = urlunsplit(("", "", quote(raw_path, safe=_PATH_SAFE), urlencode(query), ""))
        if self.resolver is not None:
            address, port = self.resolver(target.host, target.port)
        else:
            try:
                address, port = public_address(target.host, target.port), target.port
            except (UnicodeError, ValueError) as exc:  # a name IDNA cannot encode
                raise Refused(f"cannot resolve {target.host!r}: {exc}", 400) from None
        conn = _connection(target, address, port, self.timeout_s)
        try:
            default = {"http": 80, "https": 443}[target.scheme]
            out["Host"] = target.host if target.port == default else f"{target.host}:{target.port}"
            out["Accept-Encoding"] = "identity"  # bodies the scrubber can read
            try:  # http.client checks the request line and headers before it sends a byte
                conn.request(method.upper(), path, body=body or None, headers=out)
            except (ValueError, http.client.InvalidURL) as exc:  # the agent's bytes
                raise Refused(f"invalid request: {exc}", 400) from None
            reply = conn.getresponse()
            data = reply.read(access.spec.max_response_bytes + 1)
            encoding = (reply.getheader("content-encoding") or "").strip().lower()
            data = _decoded(data, encoding, access.spec.max_response_bytes + 1)
            kept = {
                k.lower(): access.scrub(v.encode("latin-1", "replace")).decode("latin-1")
                for k, v in reply.getheaders()
                if k.lower() in _KEEP_RESPONSE
            }
            return Recorded(reply.status, kept, access.scrub(data))
        finally:
            conn.close()


def _connection(target: Target, address: str, port: int, timeout_s: float) -> Any:
    """A connection to the checked address that still speaks to (and verifies) the host."""
    if target.scheme == "http":

        class _Pinned(http.client.HTTPConnection):
            def connect(self) -> None:
                self.sock = socket.create_connection((address, port), timeout_s)

        return _Pinned(target.host, target.port, timeout=timeout_s)
    context = ssl.create_default_context()

    class _PinnedTLS(http.client.HTTPSConnection):
        def connect(self) -> None:
            sock = socket.create_connection((address, port), timeout_s)
            self.sock = context.wrap_socket(sock, server_hostname=target.host)

    return _PinnedTLS(target.host, target.port, timeout=timeout_s, context=context)


def _decoded(data: bytes, encoding: str, limit: int) -> bytes:
    """A gzip or deflate body decompressed (at most ``limit`` bytes), for a service that
    compresses though asked not to: the scrubber must read what the agent will."""
    if encoding not in ("gzip", "x-gzip", "deflate"):
        return data
    window = 47 if encoding != "deflate" else 15  # 47: gzip or zlib header, detected
    for bits in (window, -15):  # a raw deflate stream, as some servers send
        try:
            return zlib.decompressobj(bits).decompress(data, limit)
        except zlib.error:
            continue
    return data


def _checked_url(url: str) -> str:
    """The request URL as valid text of a bounded length (it is recorded and echoed).

    Raises:
        Refused: (414) too long, or (400) not valid Unicode.
    """
    if len(url) > MAX_URL_CHARS:
        raise Refused(f"the URL has {len(url):,} characters; the limit is {MAX_URL_CHARS:,}", 414)
    try:
        return ingress.text(url, "the URL", MAX_URL_CHARS)
    except ingress.IngressError as exc:
        raise Refused(str(exc), 400) from None


def _answer(status: int, verdict: str, text: str) -> tuple[int, dict[str, str], bytes]:
    return (
        status,
        {VERDICT_HEADER: verdict, "content-type": "text/plain; charset=utf-8"},
        text.encode(),
    )


class _QuietServer(ThreadingHTTPServer):
    """Threads per connection; a client that goes away mid-answer prints no traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: the exchanges that were answered are in the proxy's log."""


class _Handler(BaseHTTPRequestHandler):
    proxy: EgressProxy
    protocol_version = "HTTP/1.1"
    server_version = "toolproof-egress"
    sys_version = ""

    def _serve(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            length = int(headers.get("content-length", "0") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:  # read no further: the task's limit is lower
            status, out, body = _answer(
                413, "refused", f"request body of {length} bytes is over the limit of {MAX_BODY}"
            )
            self.close_connection = True
        else:
            data = self.rfile.read(length) if length else b""
            try:
                status, out, body = self.proxy.handle(self.command, self.path, headers, data)
            except Exception as exc:  # the proxy's own failure: answered, never a traceback
                self.proxy._note(self.command, self.path[:200], f"proxy failed: {exc!r}"[:300])
                status, out, body = _answer(
                    500, "infra", f"the egress proxy failed: {type(exc).__name__}"
                )
        self.send_response(status)
        for key, value in out.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the exchanges are in :attr:`EgressProxy.log`, not on stderr."""
