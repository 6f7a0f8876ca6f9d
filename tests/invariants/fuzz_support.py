"""What the invariant fuzz suite shares: hostile values, a raw loopback server, the checks.

Imported by the ``test_*`` modules of this directory as a top-level module (pytest puts
the directory on ``sys.path``), like ``tests/agents/adapter_support.py``.

* ``EXAMPLES`` / ``fuzz``: the example budget (``TOOLPROOF_FUZZ_EXAMPLES`` scales it) and
  the Hypothesis settings every property uses (seeded: the same examples every run);
* ``hostile_text``, ``hostile_number``, ``hostile_json``: what an agent can send;
* ``RawServer``: a threaded HTTP server on 127.0.0.1 answering each request with the next
  scripted raw reply (any bytes, any status; or a disconnect mid-reply, or a slow reply);
* ``small_suite``: two core tasks (a records world and a workspace world) with tight limits;
* ``run_fuzzed`` and ``check_run``: one run, and the invariants every run must keep.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.spec import SuiteConfig, resolve_suite_path
from toolproof.trajectory import Termination

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "15"))
"""Generated runs per property (each is a whole run of two episodes)."""

fuzz = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # the same examples every time: a CI failure reproduces
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TASKS = ["hello-file", "stock-lookup"]
"""A workspace world (write_file takes free text) and a records world."""
OFFERED = ["create_file", "write_file", "read_file", "list_files", "get_stock", "get_product"]

SURROGATES = ["\udcff", "done \udcff", "\ud800", "ok\udfff\ud83d", "\ud83d"]
hostile_text = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=24),  # lone surrogates too
    st.sampled_from(SURROGATES),
    st.sampled_from(["", "\x00", "done", "\u202e", "☃" * 3]),
)
"""Any Unicode an agent can put in a str, lone UTF-16 surrogates included."""

hostile_number = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1, 0, 2**63, 10**13, -24_690.0, 1e308, float("nan"), True]),
)
"""Counts and costs no agent should report: negative, NaN, infinite, past any limit."""


def nested(depth: int) -> Any:
    """A list nested ``depth`` deep."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


_scalars = st.one_of(st.none(), st.booleans(), hostile_number, hostile_text)
hostile_json = st.one_of(
    st.recursive(
        _scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3)
        ),
        max_leaves=12,
    ),
    st.integers(min_value=30, max_value=3000).map(nested),  # deep nesting
)
"""JSON-like data as an in-process agent could hand it (NaN, surrogate keys, deep)."""

hostile_arguments = st.one_of(
    st.fixed_dictionaries({"path": hostile_text, "content": hostile_text}),
    st.fixed_dictionaries({"product_id": st.one_of(hostile_text, hostile_number)}),
    st.dictionaries(hostile_text, hostile_json, max_size=3),
    hostile_json,
)
tool_names = st.one_of(st.sampled_from(OFFERED), hostile_text)


def encodings(value: Any) -> list[bytes]:
    """The ways a remote agent can put ``value`` on the wire: escaped ASCII (a lone
    surrogate as ``\\udcff``, NaN as ``NaN``), and raw UTF-8 with surrogates encoded
    (bytes that are not UTF-8)."""
    try:
        escaped = json.dumps(value).encode()
        raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return [b"[" * 5000]
    return [escaped, raw]


def wire_body(value: Any) -> st.SearchStrategy[bytes]:
    """A strategy of bodies carrying ``value`` (one of its :func:`encodings`)."""
    return st.sampled_from(encodings(value))


class Big:
    """A body too big to show in a failing example: named, made when served."""

    MADE = {
        "deep": lambda: b"[" * 100_000 + b"]" * 100_000,
        "long text": lambda: b'{"content": "' + b"x" * 1_000_010 + b'"}',  # over one text's limit
        "9 MB": lambda: b'{"content": "' + b"y" * (9 << 20) + b'"}',  # over one reply's limit
    }

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __bytes__(self) -> bytes:
        return self.MADE[self.kind]()

    def __repr__(self) -> str:
        return f"Big({self.kind!r})"


garbage_body = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(
        [
            b"",
            b"<html>busy</html>",
            b'{"content": "unclosed',
            b'{"usage": {"input_tokens": 1e400}}',
            b'{"content": "ok", "usage": {"input_tokens": 100000000000000000000}}',
        ]
    ),
    st.sampled_from(sorted(Big.MADE)).map(Big),
)
"""Bodies that break the protocol: not JSON, cut short, too deep, too big."""


@dataclass(frozen=True)
class Reply:
    """One raw reply of :class:`RawServer`.

    Attributes:
        status: The HTTP status.
        body: The bytes sent.
        mode: ``plain``; ``disconnect`` (half the body, then the connection closes);
            ``slow`` (a short wait first); ``unsized`` (no content-length: read to close).
    """

    status: int
    body: bytes | Big
    mode: str = "plain"


replies_mode = st.sampled_from(["plain", "plain", "plain", "slow", "unsized", "disconnect"])


class RawServer:
    """A stdlib HTTP server on 127.0.0.1 answering each POST with the next scripted reply
    (the last one repeats), whatever the path: the HTTP agent's URL and the SDKs'
    ``/v1/chat/completions`` and ``/v1/messages`` alike."""

    SLOW_S = 0.2

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies) or [Reply(200, b"{}")]
        self.requests = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with server._lock:
                    index = min(server.requests, len(server.replies) - 1)
                    server.requests += 1
                reply = server.replies[index]
                body = bytes(reply.body)
                if reply.mode == "slow":
                    time.sleep(server.SLOW_S)
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                if reply.mode == "unsized":
                    self.send_header("connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    if reply.mode == "disconnect":
                        self.wfile.write(body[: len(body) // 2])
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    self.wfile.write(body)
                except OSError:  # the client hung up first (a body over its limit)
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # A client hanging up mid-request is the point of some replies: the server's own
        # report of it (a traceback on stderr) is not toolproof's and must not be printed.
        self.httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[RawServer]:
        """Serve in a thread for the length of the block."""
        thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()
            thread.join(timeout=10)


FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "max_retries": 1, "timeout": 3}
"""Agent options: retries instant and few, a dead server costs seconds at most."""


def small_suite(root: Path) -> Path:
    """A suite of :data:`TASKS` copied from core, with limits that keep a hostile run short."""
    core = resolve_suite_path("core")
    data = yaml.safe_load((core / "suite.yaml").read_text())
    config = SuiteConfig.model_validate(data)
    (root / config.tasks).mkdir(parents=True)
    data["limits"].update(max_steps=4, step_timeout_s=5, total_timeout_s=20)
    (root / "suite.yaml").write_text(yaml.safe_dump(data))
    for task_id in TASKS:
        found = sorted((core / config.tasks).rglob(f"{task_id}.yaml"))
        shutil.copy(found[0], root / config.tasks / f"{task_id}.yaml")
    return root


def run_fuzzed(suite: Path, run_dir: Path, agent: str, options: dict[str, Any]) -> dict[str, Any]:
    """One run of the suite's tasks by ``agent``, in process; its summary.

    No exception may escape :meth:`Runner.run`: a property fails on one.
    """
    config = RunConfig(suite=str(suite), agent=agent, agent_options=options, retries=0)
    return asyncio.run(Runner(config, run_dir, parallel=2).run())


def numbers(value: Any, where: str = "summary") -> Iterator[tuple[str, float]]:
    """Every number in a JSON document, with its path (booleans are not numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from numbers(item, f"{where}[{i}]")


def check_run(run_dir: Path, *, infra_injected: bool) -> None:
    """The invariants of every run, whatever the agent sent.

    * every planned episode is stored exactly once, and reads back;
    * none is an ``infra_error`` unless the test injected an infrastructure fault;
    * every count and cost of ``summary.json`` is finite and non-negative.
    """
    planned = {f"{task}#0" for task in TASKS}
    with RunReader(run_dir) as reader:
        assert reader.count() == len(planned), reader.keys()
        records = {r.key: r for r in reader.records()}
    assert set(records) == planned
    if not infra_injected:
        infra = {
            k: r.trajectory.error
            for k, r in records.items()
            if r.score.termination is Termination.INFRA_ERROR
        }
        assert not infra, f"infra_error without an injected infrastructure fault: {infra}"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["episodes"]["finished"] == len(planned)
    for where, number in numbers(summary):
        assert math.isfinite(number) and number >= 0, f"{where} = {number!r}"
