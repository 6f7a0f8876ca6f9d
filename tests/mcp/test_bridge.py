"""The harness's side of the sandbox bridge: routes checked, bytes relayed, floods cut off."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolproof.mcp._bridge import Bridge, BridgeError, parse_route


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1:8443/v1",  # not plain http: the forwarder relays bytes, not TLS
        "http://10.0.0.1:80/v1",  # not loopback
        "http://127.0.0.1.evil.example:80/",  # looks like loopback, is not
        "http://example.com:80/",
        "http://127.0.0.1/v1",  # no port
        "http://127.0.0.1:99999/",  # not a port
        "http://[::1/",  # not a URL
        "file:///etc/passwd",
        "http://127.0.0.1:80/\x00",
    ],
)
def test_only_loopback_http_urls_with_a_port_are_bridged(url: str) -> None:
    with pytest.raises(BridgeError) as refused:
        parse_route("OPENAI_BASE_URL", url)
    assert "OPENAI_BASE_URL" in str(refused.value)


@pytest.mark.parametrize("name", ["", "1ABC", "A-B", "A=B", "A B", "X\x00"])
def test_variable_names_are_checked(name: str) -> None:
    with pytest.raises(BridgeError, match="not an environment variable name"):
        parse_route(name, "http://127.0.0.1:80/")


def test_routes_keep_their_paths_and_share_a_socket_per_port() -> None:
    route = parse_route("OPENAI_BASE_URL", "http://localhost:8080/e/TOKEN/openai/v1")
    assert (route.host, route.port, route.prefix, route.suffix) == (
        "127.0.0.1",
        8080,
        "http://127.0.0.1:",
        "/e/TOKEN/openai/v1",
    )
    bridge = Bridge(
        Path("/nonexistent"),
        [
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/e/T/openai/v1"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/e/T/anthropic"),
            ("TOOLPROOF_MCP_URL", "http://127.0.0.1:9000/mcp"),
            ("IPV6", "http://[::1]:9001"),
        ],
    )
    spec = bridge.spec()
    assert [(e["host"], e["port"]) for e in spec["listen"]] == [
        ("127.0.0.1", 8080),
        ("127.0.0.1", 9000),
        ("::1", 9001),
    ]
    assert spec["env"]["ANTHROPIC_BASE_URL"] == ["http://127.0.0.1:", 0, "/e/T/anthropic"]
    assert spec["env"]["TOOLPROOF_MCP_URL"] == ["http://127.0.0.1:", 1, "/mcp"]
    assert spec["env"]["IPV6"] == ["http://[::1]:", 2, ""]


@pytest.fixture
async def echo() -> AsyncIterator[int]:
    """A loopback TCP server that echoes what it gets, upper-cased."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def _cut(reader: asyncio.StreamReader) -> bool:
    """Whether the bridge closed this connection (EOF or reset) within a few seconds."""
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except (ConnectionResetError, asyncio.IncompleteReadError):
        return True


async def test_bytes_are_relayed_both_ways(tmp_path: Path, echo: int) -> None:
    async with Bridge(tmp_path, [("URL", f"http://127.0.0.1:{echo}/")]):
        assert (tmp_path / "b0.sock").stat().st_mode & 0o777 == 0o777
        reader, writer = await asyncio.open_unix_connection(str(tmp_path / "b0.sock"))
        writer.write(b"hello")
        writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 10) == b"HELLO"
        writer.close()


async def test_too_many_connections_are_closed_at_once(tmp_path: Path, echo: int) -> None:
    async with Bridge(tmp_path, [("URL", f"http://127.0.0.1:{echo}/")], max_connections=2) as b:
        path = str(tmp_path / "b0.sock")
        held = [await asyncio.open_unix_connection(path) for _ in range(2)]
        for _, writer in held:  # both relayed (the echo proves they are connected)
            writer.write(b"x")
        for reader, _ in held:
            assert await asyncio.wait_for(reader.read(1), 10) == b"X"
        reader, extra = await asyncio.open_unix_connection(path)
        assert await _cut(reader)
        assert b.refused == 1
        for _, writer in [*held, (reader, extra)]:
            writer.close()


async def test_a_flood_past_max_bytes_cuts_everything_and_refuses_more(
    tmp_path: Path, echo: int
) -> None:
    async with Bridge(tmp_path, [("URL", f"http://127.0.0.1:{echo}/")], max_bytes=100_000) as b:
        path = str(tmp_path / "b0.sock")
        quiet_reader, quiet = await asyncio.open_unix_connection(path)
        _reader, writer = await asyncio.open_unix_connection(path)
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            for _ in range(100):  # 6.4 MB of garbage
                writer.write(b"\xff" * 65536)
                await writer.drain()
                await asyncio.sleep(0)
        assert b.exhausted and b.received > 100_000
        assert await _cut(quiet_reader)  # the other connection is cut too
        late, late_writer = await asyncio.open_unix_connection(path)
        assert await _cut(late)
        for end in (quiet, writer, late_writer):
            end.close()


async def test_an_endpoint_that_is_down_ends_only_that_connection(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with Bridge(tmp_path, [("URL", f"http://127.0.0.1:{port}/")]):
        reader, writer = await asyncio.open_unix_connection(str(tmp_path / "b0.sock"))
        assert await _cut(reader)
        writer.close()
