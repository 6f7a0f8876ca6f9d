"""An HTTP agent's reply is capped: read as a stream, refused past the limit, never buffered.

A real loopback server streams the replies; each over-limit reply ends the episode as
an ``agent_error`` naming the limit, after one request (no retries).
"""

from __future__ import annotations

import json
import socket

from adapter_support import FAST, FIFTY_MB, FloodServer, RawServer, run_core

from toolproof.agents.adapters.http_agent import MAX_REPLY_BYTES
from toolproof.agents.limits import MAX_CALLS_PER_TURN, MAX_CONTENT_CHARS
from toolproof.trajectory import Termination


async def test_a_50_mb_reply_is_refused_while_it_streams() -> None:
    with FloodServer(declare=False).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST))
        assert server.done.wait(30)
    assert trajectory.termination is Termination.AGENT_ERROR
    assert f"a body of more than {MAX_REPLY_BYTES:,} bytes" in (trajectory.error or "")
    assert server.requests == 1  # not retried
    # The client stopped reading at the limit: what the server got out is the limit plus
    # what the loopback socket buffers held, far from the 50 MB it meant to send.
    assert server.sent < FIFTY_MB * 0.8, server.sent


async def test_a_declared_50_mb_reply_is_refused_before_its_body_is_read() -> None:
    with FloodServer(declare=True).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST))
        assert server.done.wait(30)
    assert trajectory.termination is Termination.AGENT_ERROR
    assert f"(content-length {FIFTY_MB + 20:,})" in (trajectory.error or "")
    assert server.requests == 1


async def test_a_reply_within_the_body_limit_still_meets_the_turn_limits() -> None:
    content = json.dumps({"content": "y" * (MAX_CONTENT_CHARS + 1)})
    calls = json.dumps(
        {
            "tool_calls": [
                {"id": f"c{n}", "name": "get_stock", "arguments": {"product_id": "A"}}
                for n in range(MAX_CALLS_PER_TURN + 1)
            ]
        }
    )
    for body, said in (
        (content, f"content has {MAX_CONTENT_CHARS + 1:,} characters"),
        (calls, f"the limit is {MAX_CALLS_PER_TURN} per turn"),
    ):
        with RawServer([(200, body, "application/json")]).running() as server:
            trajectory, _ = await run_core(server.url, dict(FAST))
        assert trajectory.termination is Termination.AGENT_ERROR
        assert said in (trajectory.error or ""), trajectory.error
        assert len(server.bodies) == 1


async def test_a_long_error_page_is_cut_and_quoted() -> None:
    page = "<html>" + "e" * (5 * 1024 * 1024) + "</html>"
    with RawServer([(500, page, "text/html")]).running() as server:
        trajectory, _ = await run_core(server.url, {**FAST, "max_retries": 0})
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "HTTP 500" in (trajectory.error or "")
    assert len(trajectory.error or "") < 2000


def test_the_flood_server_really_floods() -> None:
    """The refusal above is the client's doing: a reader that keeps reading gets 50 MB."""
    server = FloodServer(declare=False)
    with server.running():
        host, port = server.httpd.server_address[:2]
        with socket.create_connection((str(host), int(port)), timeout=30) as sock:
            sock.sendall(b"POST /act HTTP/1.0\r\ncontent-length: 2\r\n\r\n{}")
            received = 0
            while data := sock.recv(1 << 20):
                received += len(data)
        assert server.done.wait(30)
    assert received > FIFTY_MB
