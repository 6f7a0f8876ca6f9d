"""Helpers of the report and viewer tests (fixtures are in ``conftest.py``).

* ``record``: a crafted episode record carrying a given (untrusted) text everywhere;
* ``core_runs_dir``: the ``core`` suite run by oracle and random, once per session;
* ``chromium_path`` / ``CHROMIUM_ARGS``: Debian's chromium for Playwright;
* ``screenshots_dir``: where browser tests save screenshots, when asked.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord
from toolproof.spec import resolve_suite_path

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def run_core(agent: str, run_dir: Path, epochs: int = 2) -> Path:
    """Run the core suite with ``agent`` into ``run_dir``."""
    config = RunConfig(suite=str(resolve_suite_path("core")), agent=agent, epochs=epochs)
    asyncio.run(Runner(config, run_dir, parallel=2).run())
    return run_dir


_CORE_RUNS: list[Path] = []


def core_runs_dir(factory: pytest.TempPathFactory) -> Path:
    """A folder with ``core-oracle`` and ``core-random``, made once per test session."""
    if not _CORE_RUNS:
        root = factory.mktemp("core-runs")
        for agent in ("oracle", "random"):
            run_core(agent, root / f"core-{agent}")
        _CORE_RUNS.append(root)
    return _CORE_RUNS[0]


def record(
    task_id: str = "t1",
    epoch: int = 0,
    *,
    passed: bool = False,
    text: str = "42",
    category: str = "normal",
    steps: int = 2,
) -> EpisodeRecord:
    """A crafted episode whose messages, tool calls and results all carry ``text``."""
    calls = [
        {
            "index": i,
            "message": {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "name": "write_file",
                        "arguments": {"path": text, "content": text},
                    }
                ],
            },
            "results": [{"call_id": f"c{i}", "name": "write_file", "content": text}],
            "diff": {"records": {f"items.{text}": [None, text]}, "files_added": [text]},
        }
        for i in range(steps)
    ]
    level = "perfect" if passed else "fail"
    return EpisodeRecord.model_validate(
        {
            "key": f"{task_id}#{epoch}",
            "task": {
                "id": task_id,
                "type": "multi_step",
                "category": category,
                "difficulty": 1,
                "domain": "files",
            },
            "epoch": epoch,
            "seed": 1,
            "agent": "crafted",
            "score": {
                "passed": passed,
                "level": level,
                "fraction": 1.0 if passed else 0.0,
                "checks": [
                    {
                        "name": "check",
                        "kind": "state",
                        "passed": passed,
                        "score": 1.0 if passed else 0.0,
                        "detail": text,
                    }
                ],
                "termination": "completed",
                "tool_calls": steps,
                "failure_mode": None if passed else "wrong_answer",
            },
            "trajectory": {
                "episode_id": f"{task_id}#{epoch}",
                "task_id": task_id,
                "epoch": epoch,
                "seed": 1,
                "agent": "crafted",
                "termination": "completed",
                "prompt": [{"role": "user", "content": text}],
                "steps": calls,
                "final_answer": text,
                "started_at": "2026-01-01T00:00:00+00:00",
            },
        }
    )


def chromium_path() -> str | None:
    """Debian's chromium (or ``TOOLPROOF_CHROMIUM``), or None."""
    return os.environ.get("TOOLPROOF_CHROMIUM") or shutil.which("chromium")


def screenshots_dir() -> Path | None:
    """Where browser tests save screenshots (``TOOLPROOF_SCREENSHOTS``), or None."""
    value = os.environ.get("TOOLPROOF_SCREENSHOTS")
    return Path(value) if value else None
