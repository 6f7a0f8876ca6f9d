"""Helpers for the adapter tests: core task instances, scripted runs, a raw HTTP server.

Imported by the ``test_adapter_*`` modules as a top-level module (pytest puts
this directory on ``sys.path``), like ``tests/testing/sdk_clients.py``.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Score
from toolproof.spec import SuiteConfig, TaskInstance, load_task, render, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall
from toolproof.trajectory import Trajectory

FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "timeout": 30}
"""Options that keep retries instant and a broken server from hanging a test."""

STOCK_SUM = [
    ScriptedReply(
        tool_calls=[
            ScriptedToolCall("get_stock", {"product_id": "A"}),
            ScriptedToolCall("get_stock", {"product_id": "B"}),
        ]
    ),
    ScriptedReply(tool_calls=[ScriptedToolCall("calculate", {"expression": "15 + 27"})]),
    ScriptedReply("Products A and B have 42 units in stock together."),
]
"""A model that solves the core task stock-sum: two parallel lookups, a sum, the answer."""


def _core() -> tuple[Path, SuiteConfig]:
    root = resolve_suite_path("core")
    config = SuiteConfig.model_validate(yaml.safe_load((root / "suite.yaml").read_text()))
    return root, config


def core_task_file(task_id: str) -> Path:
    """The file of a core task, wherever the suite keeps it."""
    root, config = _core()
    found = sorted((root / config.tasks).rglob(f"{task_id}.yaml"))
    assert found, f"the core suite has no task {task_id!r}"
    return found[0]


def core_instance(task_id: str = "stock-sum", epoch: int = 0) -> TaskInstance:
    """A rendered core task, loaded alone (other core tasks may be mid-edit)."""
    _, config = _core()
    return render(
        load_task(core_task_file(task_id), config),
        suite=config.name,
        suite_seed=config.seed,
        epoch=epoch,
        limits=config.limits,
        system_prompt=config.system_prompt,
    )


def mini_core(root: Path, task_ids: list[str]) -> Path:
    """A suite directory holding the core suite's config and just these core tasks."""
    core, config = _core()
    (root / config.tasks).mkdir(parents=True)
    shutil.copy(core / "suite.yaml", root / "suite.yaml")
    for task_id in task_ids:
        shutil.copy(core_task_file(task_id), root / config.tasks / f"{task_id}.yaml")
    return root


def provider_options(server: ModelServer, provider: str, **extra: Any) -> dict[str, Any]:
    """Agent options pointing a provider adapter at the scripted server."""
    url = server.base_url if provider == "openai" else server.anthropic_base_url
    return {"base_url": url, "api_key": "test", **FAST, **extra}


async def run_core(
    spec: str, options: dict[str, Any], task_id: str = "stock-sum"
) -> tuple[Trajectory, Score]:
    """Run one episode of a core task with the agent ``spec``."""
    factory = build_agent(parse_agent_spec(spec, options))
    return await run_episode(core_instance(task_id), factory, EpisodeOptions(agent_label=spec))


def results(trajectory: Trajectory) -> list[tuple[str, str | None, str]]:
    """Every tool result as (tool, error kind, content)."""
    return [(r.name, r.error_kind, r.content) for s in trajectory.steps for r in s.results]


class RawServer:
    """A stdlib HTTP server answering each POST with the next scripted raw response.

    Each response is ``(status, body, content_type)``; the last one repeats.
    ``bodies`` holds the JSON requests received.
    """

    def __init__(self, responses: list[tuple[int, str, str]]) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                with server.lock:
                    server.bodies.append(json.loads(self.rfile.read(length)))
                    index = min(len(server.bodies), len(server.responses)) - 1
                    status, body, kind = server.responses[index]
                data = body.encode()
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/act"

    @contextmanager
    def running(self) -> Iterator[RawServer]:
        """Serve in a thread for the duration of the block."""
        thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()
            thread.join(timeout=10)


FIFTY_MB = 50 * 1024 * 1024
CHUNK = b"x" * 65536


class FloodServer:
    """Answers every POST with the start of a JSON turn and then 50 MB of text.

    ``declare`` sends a content-length of 50 MB; without it the body just runs until the
    connection closes. ``sent`` counts the bytes the client let it write.
    """

    def __init__(self, *, declare: bool) -> None:
        self.sent = 0
        self.requests = 0
        self.done = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                server.requests += 1
                self.send_response(200)
                self.send_header("content-type", "application/json")
                if declare:
                    self.send_header("content-length", str(FIFTY_MB + 20))
                self.end_headers()
                try:
                    self.wfile.write(b'{"content": "')
                    while server.sent < FIFTY_MB:
                        self.wfile.write(CHUNK)
                        server.sent += len(CHUNK)
                    self.wfile.write(b'"}')
                except OSError:  # the client hung up: what it was meant to do
                    pass
                finally:
                    server.done.set()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/act"

    @contextmanager
    def running(self) -> Iterator[FloodServer]:
        thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()
            thread.join(timeout=10)
