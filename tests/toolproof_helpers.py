"""Helpers shared by the tests of the executable core (fixtures are in ``conftest.py``).

* ``FIXTURES``: sample and broken task files, the fake plug-in package and
  ``toolproof_test_agents`` (agents importable as ``python:toolproof_test_agents:NAME``);
* ``make_task`` / ``write_suite``: small in-test suites from dicts, written as YAML;
* ``strip_timing``: a trajectory or record without the fields that measure time;
* ``bind_unix``: a Unix socket bound at a path deeper than AF_UNIX allows (tmp_path).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from toolproof.testing import ScriptedReply, ScriptedToolCall

FIXTURES = Path(__file__).parent / "fixtures"
TIMING_FIELDS = frozenset(
    {"started_at", "duration_s", "agent_s", "tool_s", "latency", "tool_queue_s", "model_queue_s"}
)
"""Fields of trajectories, records and summaries (``latency``) that measure time, and so
differ between runs (a step's ``tool_queue_s``/``model_queue_s`` is there only when it waited)."""

if str(FIXTURES) not in sys.path:  # agents and checks named python:MODULE:ATTR in tests
    sys.path.insert(0, str(FIXTURES))


def bind_unix(sock: socket.socket, path: Path) -> None:
    """Bind ``sock`` (AF_UNIX) at ``path``, however deep: AF_UNIX takes at most 107 bytes and
    a tmp_path is ~70 deep already under xdist (``/tmp/pytest-of-root/pytest-NN/popen-gw1/
    test_name0/``), so the bind goes through ``/proc/self/fd`` of the socket's folder."""
    folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        sock.bind(f"/proc/self/fd/{folder}/{path.name}")
    finally:
        os.close(folder)


def strip_timing(value: Any) -> Any:
    """``value`` without any timing field, at any depth (for comparing runs)."""
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


BASE_TASK: dict[str, Any] = {
    "id": "stock",
    "description": "How many units of product A are in stock?",
    "type": "single_tool",
    "tools": ["get_stock", "adjust_stock"],
    "world": {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}}},
    "success": [{"kind": "output", "number": 7}],
    "solution": {
        "calls": [{"tool": "get_stock", "args": {"product_id": "A"}}],
        "answer": "There are 7 units.",
    },
}
"""A small valid task: look up product A's stock (7) with get_stock."""


def make_task(**fields: Any) -> dict[str, Any]:
    """A copy of :data:`BASE_TASK` with ``fields`` replaced (``None`` removes a field)."""
    task = copy.deepcopy(BASE_TASK)
    for key, value in fields.items():
        if value is None:
            task.pop(key, None)
        else:
            task[key] = value
    return task


def write_yaml(path: Path, data: Any) -> Path:
    """Write ``data`` as YAML (creating parent directories) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_suite(root: Path, tasks: list[dict[str, Any]], **config: Any) -> Path:
    """Write a suite directory (suite.yaml + tasks/<id>.yaml) and return it."""
    suite = {"name": "mini", "version": "1", "canary": "toolproof test canary", "seed": 11}
    suite.update(config)
    write_yaml(root / "suite.yaml", suite)
    for task in tasks:
        write_yaml(root / "tasks" / f"{task['id']}.yaml", task)
    return root


@dataclass
class CliResult:
    """What one CLI invocation did."""

    code: int
    out: str
    err: str


@contextlib.contextmanager
def blocking_agents(folder: Path, name: str) -> Iterator[Any]:
    """Import the test module ``name`` from ``folder``: agents or checks that block until its
    ``RELEASE`` event is set. ``RELEASE`` is cleared first and set on the way out, so no
    thread is left blocked after the test, and ``folder`` leaves ``sys.path`` again."""
    sys.path.insert(0, str(folder))
    module = importlib.import_module(name)
    module.RELEASE.clear()
    try:
        yield module
    finally:
        module.RELEASE.set()
        sys.path.remove(str(folder))


STOCK_SUM_PRICED = [
    ScriptedReply(
        tool_calls=[
            ScriptedToolCall("get_stock", {"product_id": "A"}),
            ScriptedToolCall("get_stock", {"product_id": "B"}),
        ],
        usage=(100, 20),
    ),
    ScriptedReply(
        tool_calls=[ScriptedToolCall("calculate", {"expression": "15 + 27"})], usage=(130, 10)
    ),
    ScriptedReply("Products A and B have 42 units in stock together.", usage=(150, 12)),
]
"""A model solving core's stock-sum (two lookups, a sum, the answer), with exact tokens."""


def run_single(config: Any, run_dir: Path) -> tuple[Any, dict[str, Any]]:
    """Run a one-episode ``RunConfig`` into ``run_dir``; its stored record and summary."""
    import asyncio

    from toolproof.engine import Runner
    from toolproof.results import RunReader

    asyncio.run(Runner(config, run_dir, parallel=1).run())
    with RunReader(run_dir) as reader:
        (record,) = list(reader.records())
        summary = reader.summary()
    assert summary is not None
    return record, summary


def stored_count(run_dir: Path) -> int:
    """Episodes a run folder's ``run.db`` holds now (0 before it exists, or while busy):
    read-only, so a test may watch a run in another process."""
    import sqlite3

    db = run_dir / "run.db"
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            (count,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
    except sqlite3.Error:  # not created yet, or busy
        return 0
    return int(count)


def stored_sequence(run_dir: Path) -> dict[str, int]:
    """The order each stored episode was appended in, by key (a rerun would get a new one)."""
    import sqlite3

    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT key, seq FROM episodes").fetchall())


def run_results(run_dir: Path) -> tuple[Any, Any]:
    """A finished run's summary and trajectories, timings stripped (to compare two runs)."""
    import json

    summary = json.loads((run_dir / "summary.json").read_text())
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return strip_timing(summary), [strip_timing(json.loads(line)) for line in lines]
