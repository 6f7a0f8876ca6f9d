"""The ``live`` toolkit: HTTP calls to real services, through the run's egress proxy only.

``http_get`` and ``http_send`` never open a connection of their own: every request
goes to the proxy toolproof started for the run (:func:`use_egress`), which checks
the task's allowlist and limits, injects secrets and records or replays. The
agent sees ``{status, url, content_type, body}`` (JSON bodies parsed) or, when
the proxy refuses, a :class:`ToolError` saying why. Whatever the agent chose is its
own (ARCHITECTURE.md, invariant 8): a URL off the allowlist, a method, a body too big,
a malformed or overlong URL, and a replay miss (a request the cassettes do not hold)
are each a ``ToolError`` the agent sees, and the episode is scored. Only what the tool
or the proxy witnessed failing for a well-formed request (no proxy running, the proxy
not answering, an allowlisted service unreachable while recording) raises
:class:`LiveInfraError`, which the gateway reports as an infra error.

:func:`answer_from_response` is the suite's relation check: the final answer
names the value found at a path of a response the agent actually received,
so it tolerates the changes real data has.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool

MAX_REDIRECTS = 5
MAX_BODY = 16 * 1024 * 1024
"""Largest request body the tool sends (the proxy's hard cap; tasks allow less)."""
MAX_URL_CHARS = 8192
"""Longest URL the tools send (the proxy's limit too)."""
_URL_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))
"""Printable ASCII but space: kept as is in a URL; any other character is percent-encoded."""
_TIMEOUT_S = 60.0
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
_FORBIDDEN_HEADERS = ("host", "content-length", "connection", "transfer-encoding", "proxy-")


class LiveInfraError(Exception):
    """The live service could not be reached or replayed: an infra error, not the agent's."""


@dataclass(frozen=True)
class Egress:
    """Where the run's egress proxy listens, and the token it accepts."""

    host: str
    port: int
    token: str


_egress: Egress | None = None


@contextlib.contextmanager
def use_egress(url: str, token: str) -> Iterator[None]:
    """Route this process's live tools through the proxy at ``url`` while the block runs."""
    global _egress
    parts = urlsplit(url)
    previous = _egress
    _egress = Egress(parts.hostname or "127.0.0.1", parts.port or 80, token)
    try:
        yield
    finally:
        _egress = previous


def _fetch(
    ctx: ToolContext, method: str, url: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    egress = _egress
    if egress is None:
        raise LiveInfraError(
            "no egress proxy is running for this live task; run it with `toolproof run` "
            "(which starts one) or inside toolproof.live.open_live"
        )
    instance = ctx.instance
    conn = http.client.HTTPConnection(egress.host, egress.port, timeout=_TIMEOUT_S)
    sent = {
        **headers,
        "X-Toolproof-Token": egress.token,
        "X-Toolproof-Task": instance.task.id if instance else "",
        "X-Toolproof-Episode": instance.key if instance else "",
        # The proxy reads the target from the absolute URL; http.client would derive Host
        # from it, and fails (an assertion) on an agent's odd host such as "%1F".
        "Host": f"{egress.host}:{egress.port}",
    }
    try:
        conn.request(method, url, body=body or None, headers=sent)
        reply = conn.getresponse()
        data = reply.read()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, data
    except (http.client.InvalidURL, ValueError) as exc:
        raise ToolError(f"invalid request: {exc}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise LiveInfraError(f"the egress proxy did not answer: {exc}") from None
    finally:
        conn.close()


def _call(
    ctx: ToolContext, method: str, url: str, body: bytes, headers: dict[str, str]
) -> dict[str, Any]:
    for _ in range(MAX_REDIRECTS + 1):
        status, got, data = _fetch(ctx, method, url, body, headers)
        verdict = got.get("x-toolproof-proxy")
        text = data.decode("utf-8", errors="replace")
        if verdict == "infra":
            raise LiveInfraError(text)
        if verdict == "refused":
            raise ToolError(f"HTTP {status} refused by the egress proxy: {text}")
        if verdict == "unrecorded":  # a replay miss: the agent's request, answered as such
            raise ToolError(f"HTTP {status} not recorded: {text}")
        if status in (301, 302, 303, 307, 308) and "location" in got:
            url = urljoin(url, got["location"])  # followed through the proxy: checked again
            if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
                method, body = "GET", b""
            continue
        content_type = got.get("content-type", "")
        value: Any = text
        if "json" in content_type:
            with contextlib.suppress(ValueError):
                value = json.loads(text)
        result = {"status": status, "url": url, "content_type": content_type, "body": value}
        if status >= 400:
            raise ToolError(f"HTTP {status}: {text[:2000]}")
        return result
    raise ToolError(f"more than {MAX_REDIRECTS} redirects, last to {url}")


def _check_url(url: str) -> str:
    """The URL to send: absolute http(s), bounded, other odd characters percent-encoded.

    Raises:
        ToolError: not an absolute http(s) URL, whitespace in it, or too long.
    """
    if any(c in url for c in "\r\n\t ") or not url.lower().startswith(("http://", "https://")):
        raise ToolError(f"give an absolute http(s) URL without spaces, not {url[:200]!r}")
    try:
        sent = quote(url, safe=_URL_SAFE)  # non-ASCII, control bytes: sent as %XX (UTF-8)
    except UnicodeEncodeError:
        raise ToolError("the URL is not valid Unicode (a lone surrogate); send UTF-8") from None
    if len(sent) > MAX_URL_CHARS:
        raise ToolError(
            f"the URL has {len(sent):,} characters (percent-encoded); at most "
            f"{MAX_URL_CHARS:,} can be sent"
        )
    return sent


@tool(kind=ToolKind.READ, blocking=True)
def http_get(ctx: ToolContext, url: str) -> dict[str, Any]:
    """Fetch a URL from a real web service (GET) and return its status and body.

    Only the hosts this task allows can be reached; JSON bodies come back parsed.

    Args:
        url: Absolute URL, e.g. "https://api.example.org/v1/items?limit=5".
    """
    return _call(ctx, "GET", _check_url(url), b"", {"Accept": "application/json"})


@tool(kind=ToolKind.WRITE, blocking=True)
def http_send(
    ctx: ToolContext,
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Send an HTTP request to a real web service and return its status and body.

    Only the hosts and methods this task allows get through.

    Args:
        method: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
        url: Absolute URL, e.g. "https://api.example.org/v1/items".
        body: A JSON value sent as the request body (none when null).
        headers: Extra request headers, e.g. {"Accept": "application/json"}.
    """
    method = method.upper()
    if method not in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        raise ToolError(
            f"method must be GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS, not {method!r}"
        )
    extra: dict[str, str] = {"Accept": "application/json"}
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if (
            not _HEADER_NAME.match(name)
            or not isinstance(value, str)
            or "\n" in value
            or "\r" in value
        ):
            raise ToolError(
                f"header {name[:64]!r}: names are letters, digits and '-'; values one line"
            )
        if lowered.startswith(("x-toolproof-", *_FORBIDDEN_HEADERS)):
            raise ToolError(f"header {name!r} is set by the harness, not by tools")
        extra[name] = value
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        if len(data) > MAX_BODY:
            raise ToolError(f"the body is {len(data)} bytes; at most {MAX_BODY} can be sent")
        extra["Content-Type"] = "application/json"
    return _call(ctx, method, _check_url(url), data, extra)


def _at(value: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        if isinstance(value, list) and part.lstrip("-").isdigit():
            value = value[int(part)]
        elif isinstance(value, dict):
            value = value[part]
        else:
            raise KeyError(part)
    return value


def _mentions(answer: str, value: Any) -> bool:
    flat = re.sub(r"(?<=\d)[,\u202f\u00a0 ](?=\d{3})", "", answer).lower()
    if isinstance(value, bool) or value is None:
        return str(value).lower() in flat
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) in flat or str(value) in flat
    return str(value).lower() in flat


def answer_from_response(ctx: Any, url_contains: str, path: str) -> tuple[bool, str]:
    """Custom check: the answer names the value at ``path`` of a response the agent got.

    Looks at every successful ``http_get``/``http_send`` result whose URL contains
    ``url_contains``; passes when the value at ``path`` (dots, list indexes as
    numbers, e.g. ``0.capital.0``) of one of them appears in the final answer.
    The expected value comes from what the service returned, not from the task
    file, so the check holds when the real data changes.

    Args:
        ctx: The scoring context (anything with ``trajectory``).
        url_contains: Text the request URL must contain, e.g. "restcountries.com/v3.1/name".
        path: Where the value is in the JSON body.
    """
    answer = ctx.trajectory.final_answer or ""
    seen = 0
    for step in ctx.trajectory.steps:
        urls = {c.id: str(c.arguments.get("url", "")) for c in step.message.tool_calls}
        for result in step.results:
            if result.name not in ("http_get", "http_send") or url_contains not in urls.get(
                result.call_id, ""
            ):
                continue
            try:
                got = json.loads(result.content)
                value = _at(got["body"], path)
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            seen += 1
            if isinstance(value, (dict, list)):
                continue
            if _mentions(answer, value):
                return True, f"the answer names {value!r} from the response at {path}"
    if not seen:
        return False, f"no successful response from a URL containing {url_contains!r} had {path}"
    return False, f"the answer does not name the value at {path} of the responses received"
