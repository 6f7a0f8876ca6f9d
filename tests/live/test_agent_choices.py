"""What an agent chooses in the live track is its own (invariant 8), and secrets never reach it.

Each hostile input an agent can send through ``http_get``/``http_send`` (a URL the cassettes
do not hold, a host off the list, a method, a body too big, a malformed, overlong or odd-byte
URL) is fed through the real proxy on loopback and must come back as a :class:`ToolError` the
agent sees, never as :class:`LiveInfraError`. A secret the proxy injects must not come back in
any encoding a service may echo it in (raw, URL-encoded, base64, JSON escapes), whether in a
body, an echoed URL or a ``Location`` header.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.live import Cassette, EgressProxy, TaskAccess
from toolproof.live._scrub import Scrubber
from toolproof.spec import WorldSpec
from toolproof.spec.live import LiveSpec
from toolproof.tools import ToolContext, ToolError
from toolproof.tools.toolkits.live import http_get, http_send, use_egress
from toolproof.worlds import World

from .upstream import HOST, Upstream

FUZZ = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "0") or 0)
ODD_SECRET = 'k+y/2 é=&%3D😀"\\x'
"""A key with every character URL, JSON and base64 encodings treat specially."""

SPEC = LiveSpec(
    hosts=[HOST],
    methods=["GET", "POST"],
    max_requests=100,
    max_response_bytes=20_000,
    max_request_bytes=100,
    secrets=[{"env": "TEST_KEY", "host": HOST, "query": "key"}],
)


def context() -> ToolContext:
    instance: Any = SimpleNamespace(task=SimpleNamespace(id="t1"), key="t1/0")
    return ToolContext(world=World(WorldSpec()), instance=instance)


@pytest.fixture
def recording(upstream: Upstream, tmp_path: Path) -> Iterator[EgressProxy]:
    """A recording proxy whose task sends ODD_SECRET as the ``key`` query parameter."""
    access = {"t1": TaskAccess(SPEC, {"TEST_KEY": ODD_SECRET})}
    with (
        EgressProxy(
            access, mode="record", record_to=tmp_path / "c.yaml", resolver=upstream.resolver
        ) as started,
        use_egress(started.url, started.token),
    ):
        yield started


@pytest.fixture
def replaying() -> Iterator[EgressProxy]:
    """A replaying proxy with an empty cassette: every request is a miss."""
    with (
        EgressProxy({"t1": TaskAccess(SPEC, {})}, mode="replay", cassette=Cassette()) as started,
        use_egress(started.url, started.token),
    ):
        yield started


# --- the agent's choices are the agent's -------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: http_get(context(), f"http://{HOST}/never-recorded"), "not recorded"),
        (
            lambda: http_send(context(), "POST", f"http://{HOST}/data", body={"a": 1}),
            "not recorded",
        ),
        (lambda: http_get(context(), "http://evil.example.net/x"), "not on this task's allowlist"),
        (lambda: http_send(context(), "DELETE", f"http://{HOST}/data"), "method DELETE"),
        (
            lambda: http_send(context(), "POST", f"http://{HOST}/data", body="x" * 500),
            "over the limit",
        ),
        (lambda: http_get(context(), f"http://{HOST}:99999/data"), "not a valid URL"),
        (lambda: http_get(context(), "http://[::1/data"), "Invalid IPv6 URL"),
        (lambda: http_get(context(), f"http://{HOST}/" + "a" * 9000), "at most 8,192"),
        (lambda: http_get(context(), "ftp://example.org/x"), "absolute http"),
    ],
)
def test_every_choice_in_replay_is_a_tool_error_the_agent_sees(
    replaying: EgressProxy, call: Any, message: str
) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        call()


def test_odd_bytes_in_the_url_are_sent_percent_encoded_not_failed_upstream(
    recording: EgressProxy, upstream: Upstream
) -> None:
    odd = f"http://{HOST}/mirror/\x00\x7fé\u2028😀?q=\x01ü"
    with pytest.raises(ToolError, match="HTTP 404: "):  # the service's answer, not LiveInfraError
        http_get(context(), odd)
    path = upstream.hits[-1].split(" ", 2)[2]
    assert path.startswith("/mirror/%00%7F%C3%A9%E2%80%A8%F0%9F%98%80?")
    assert recording.log[-1]["outcome"] == "404"


@pytest.mark.parametrize(
    "target",
    [
        f"http://{HOST}/mirror/\xff\xfe%zz",  # latin-1 bytes a client could put on the wire
        f"http://{HOST}/" + "b" * 9000,  # past the proxy's URL limit: 414
        f"http://{HOST}/data?x=" + "%" * 50,
    ],
)
def test_raw_odd_request_lines_get_an_answer_never_an_infra_verdict(
    recording: EgressProxy, target: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(recording.url.rsplit(":", 1)[1]))
    conn.putrequest("GET", "PLACEHOLDER", skip_host=True, skip_accept_encoding=True)
    conn._buffer[0] = f"GET {target} HTTP/1.1".encode("latin-1")  # type: ignore[attr-defined]
    conn.putheader("X-Toolproof-Token", recording.token)
    conn.putheader("X-Toolproof-Task", "t1")
    conn.endheaders()
    reply = conn.getresponse()
    reply.read()
    conn.close()
    assert reply.getheader("X-Toolproof-Proxy") != "infra"
    assert reply.status in (200, 404, 414)


# --- secrets, in every encoding --------------------------------------------------------


def encodings(secret: str) -> list[bytes]:
    """The forms of ``secret`` an agent must never see."""
    raw = secret.encode("utf-8")
    return [
        raw,
        quote(secret, safe="").encode(),
        _lower_hex(quote(secret, safe="")).encode(),
        quote_plus(secret).encode(),
        json.dumps(secret)[1:-1].encode(),
        base64.b64encode(raw),
        base64.b64encode(raw).rstrip(b"="),
        base64.urlsafe_b64encode(raw),
        base64.urlsafe_b64encode(raw).rstrip(b"="),
    ]


def _lower_hex(quoted: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted)


def leaks(seen: bytes, secret: str) -> list[bytes]:
    """Every encoding of ``secret`` found in ``seen`` (each decoding of it included)."""
    raw = secret.encode("utf-8")
    found = [form for form in encodings(secret) if form in seen]
    text = seen.decode("utf-8", "replace")
    for decoded in (unquote(text), unquote_plus(text), _json_unescaped(text)):
        if secret in decoded:
            found.append(b"decoded: " + decoded.encode("utf-8", "replace")[:80])
    for run in re.findall(rb"[A-Za-z0-9+/_=-]{4,}", seen):  # every base64 run, every alignment
        for shift in range(4):
            part = run[shift:].rstrip(b"=")
            part = part[: len(part) // 4 * 4]
            for altchars in (b"+/", b"-_"):
                try:
                    plain = base64.b64decode(part, altchars=altchars, validate=False)
                except ValueError:
                    continue
                if raw in plain:
                    found.append(b"base64: " + run[:80])
    return found


def _json_unescaped(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        return chr(int(match.group(1), 16))

    simple = {'\\"': '"', "\\\\": "\\", "\\/": "/"}
    for escaped, plain in simple.items():
        text = text.replace(escaped, plain)
    joined = re.sub(r"\\u([0-9a-fA-F]{4})", one, text)
    return joined.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def test_an_echoed_secret_is_scrubbed_in_every_encoding(
    recording: EgressProxy, upstream: Upstream, tmp_path: Path
) -> None:
    result = http_get(context(), f"http://{HOST}/mirror")
    assert set(result["body"]) >= {"raw", "quoted", "b64", "basic", "in_blob"}
    assert result["body"]["raw"] == "<redacted>"
    assert "<redacted>" in result["body"]["path"]
    redirected = http_get(context(), f"http://{HOST}/mirror-redirect")  # Location echoes it
    assert redirected["url"].endswith("/data?seen=<redacted>")
    seen = json.dumps([result, redirected], ensure_ascii=False).encode()
    assert leaks(seen, ODD_SECRET) == []
    recording.close()
    assert leaks((tmp_path / "c.yaml").read_bytes(), ODD_SECRET) == []


def test_the_location_header_the_proxy_sends_is_scrubbed(recording: EgressProxy) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(recording.url.rsplit(":", 1)[1]))
    conn.request(
        "GET",
        f"http://{HOST}/mirror-redirect",
        headers={"X-Toolproof-Token": recording.token, "X-Toolproof-Task": "t1"},
    )
    reply = conn.getresponse()
    body = reply.read()
    conn.close()
    assert reply.status == 302
    assert reply.getheader("Location") == "/data?seen=<redacted>"
    assert leaks(str(reply.getheaders()).encode() + body, ODD_SECRET) == []


secrets_ = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=8, max_size=40
).filter(lambda s: "<" not in s and ">" not in s)
contexts = st.sampled_from(["{0}", '{{"k": "{0}"}}', "https://h/?key={0}&x=1", "Bearer {0}\n"])


def _encode(secret: str, form: int, pad: bytes) -> str:
    raw = secret.encode("utf-8")
    if form == 0:
        return secret
    if form == 1:
        return quote(secret, safe="")
    if form == 2:
        return _lower_hex(quote(secret, safe=""))
    if form == 3:
        return quote_plus(secret)
    if form == 4:
        return json.dumps(secret)[1:-1]
    if form == 5:
        return "".join(f"\\u{ord(c):04X}" if ord(c) < 0x10000 else c for c in secret)
    cut = len(pad) % 3
    blob = pad[:cut] + raw + pad[cut:]  # inside a longer blob, at any alignment
    if form == 6:
        return base64.b64encode(blob).decode()
    if form == 7:
        return base64.b64encode(blob).decode().rstrip("=")
    if form == 8:
        return base64.urlsafe_b64encode(blob).decode()
    return base64.urlsafe_b64encode(blob).decode().rstrip("=")


@settings(max_examples=max(FUZZ, 150), derandomize=True, deadline=None)
@given(
    secret=secrets_,
    form=st.integers(0, 9),
    pad=st.binary(min_size=0, max_size=4),
    where=contexts,
)
def test_property_no_encoding_of_a_generated_secret_survives(
    secret: str, form: int, pad: bytes, where: str
) -> None:
    seen = where.format(_encode(secret, form, pad)).encode("utf-8")
    scrubbed = Scrubber([secret])(seen)
    assert b"<redacted>" in scrubbed
    assert leaks(scrubbed, secret) == []


def test_the_proxys_own_failure_is_infra_and_prints_no_traceback(
    replaying: EgressProxy, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.tools.toolkits.live import LiveInfraError

    def broken(key: str) -> Any:
        raise RuntimeError("a bug in the proxy")

    monkeypatch.setattr(replaying.cassette, "lookup", broken)
    with pytest.raises(LiveInfraError, match="the egress proxy failed: RuntimeError"):
        http_get(context(), f"http://{HOST}/data")
    assert replaying.log[-1]["outcome"].startswith("proxy failed")
    assert "Traceback" not in capfd.readouterr().err


def test_a_listed_host_that_does_not_resolve_is_an_outage_not_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket as socket_module

    from toolproof.live import _policy
    from toolproof.tools.toolkits.live import LiveInfraError

    real = socket_module.getaddrinfo

    def no_dns(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HOST:
            raise socket_module.gaierror(-2, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(_policy.socket, "getaddrinfo", no_dns)
    access = {"t1": TaskAccess(SPEC, {"TEST_KEY": ODD_SECRET})}
    with (
        EgressProxy(access, mode="record", record_to=tmp_path / "c.yaml") as started,
        use_egress(started.url, started.token),
        pytest.raises(LiveInfraError, match="cannot resolve"),
    ):
        http_get(context(), f"http://{HOST}/data")


urls = st.one_of(
    st.text(max_size=60).map(lambda tail: f"http://{HOST}/{tail}"),
    st.text(max_size=60).map(lambda tail: f"http://{HOST}/data?q={tail}"),
    st.text(max_size=40).map(lambda text: f"http://{text}"),
    st.text(max_size=80),
)


@settings(
    max_examples=max(FUZZ, 80),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # one service serves all
)
@given(
    url=urls,
    method=st.sampled_from(["GET", "POST", "PUT", "get", "BREW"]),
    body=st.text(max_size=30),
    headers=st.dictionaries(
        st.sampled_from(["X-A", "Accept", "X-Toolproof-Task", "Bad Name", "Expect"]),
        st.text(max_size=20),
        max_size=2,
    ),
)
def test_property_any_url_the_agent_sends_is_answered_never_infra(
    upstream: Upstream,
    tmp_path_factory: pytest.TempPathFactory,
    url: str,
    method: str,
    body: str,
    headers: dict[str, str],
) -> None:
    access = {"t1": TaskAccess(SPEC, {"TEST_KEY": ODD_SECRET})}
    where = tmp_path_factory.mktemp("rec") / "c.yaml"
    for mode in ("replay", "record"):
        proxy = EgressProxy(
            access,
            mode=mode,  # type: ignore[arg-type]
            cassette=Cassette(),
            record_to=where,
            resolver=upstream.resolver,
        )
        with proxy as started, use_egress(started.url, started.token):
            try:
                if method == "GET":
                    http_get(context(), url)
                else:
                    http_send(context(), method, url, body=body or None, headers=headers)
            except ToolError:
                pass  # the agent's: it sees why


def test_the_service_is_asked_for_an_uncompressed_body_whatever_the_agent_asks(
    recording: EgressProxy,
) -> None:
    result = http_send(context(), "GET", f"http://{HOST}/echo", headers={"Accept-Encoding": "gzip"})
    assert result["body"]["headers"]["Accept-Encoding"] == "identity"


def test_a_body_compressed_though_not_asked_for_is_scrubbed_decompressed(
    recording: EgressProxy,
) -> None:
    result = http_get(context(), f"http://{HOST}/mirror-gzip")
    assert result["body"]["raw"] == "<redacted>"
    assert leaks(json.dumps(result, ensure_ascii=False).encode(), ODD_SECRET) == []
