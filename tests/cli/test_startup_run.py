"""A short start for ``toolproof run`` (issue 34): what a run of one tiny task imports.

Timings belong to ``benchmarks/bench_startup.py``; these tests pin the behaviour that keeps
the start short, in a fresh interpreter each: ``run --help`` loads no engine and no model,
and a run of one records-world task with the oracle loads none of the optional
dependencies (SDKs, web server, templates, numpy) and none of toolproof's parts it does not
use (time travel, comparisons, baselines, exports, reports, the web app, the upstream
benchmarks, the MCP and live servers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PROBE = """
import json, sys
from toolproof.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""
NOT_IN_A_RUN = (
    "httpx",
    "openai",
    "anthropic",
    "litellm",
    "jinja2",
    "starlette",
    "uvicorn",
    "mcp",
    "numpy",
    "ray",
    "toolproof.engine.replay",
    "toolproof.engine.processes",
    "toolproof.engine.ray_executor",
    "toolproof.metrics.compare",
    "toolproof.metrics.baseline",
    "toolproof.metrics.leaderboard",
    "toolproof.export",
    "toolproof.report",
    "toolproof.viewer._app",
    "toolproof.viewer._server",
    "toolproof.upstream.bfcl",
    "toolproof.upstream.agentdojo",
    "toolproof.mcp",
    "toolproof.live._proxy",
    "toolproof.gateway._server",
    "toolproof.testing",
)
"""Never needed by ``run core --agent oracle --task stock-sum`` (one process, no model)."""
NOT_IN_HELP = ("pydantic", "rich", "yaml", "jsonschema", "toolproof.engine", "toolproof.spec.task")


def _probe(cache: Path, *args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(cache)}
    env.pop("TOOLPROOF_NO_INDEX", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=240
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return set(report["modules"])


def test_run_help_loads_no_engine_and_no_model(tmp_path: Path) -> None:
    modules = _probe(tmp_path / "cache", "run", "--help")
    assert "toolproof.cli._run" in modules
    assert [m for m in NOT_IN_HELP if m in modules] == []


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_run_of_one_task_loads_only_what_it_uses(tmp_path: Path, warm: bool) -> None:
    cache = tmp_path / "cache"
    run = ["run", "core", "--agent", "oracle", "--task", "stock-sum", "--quiet"]
    if warm:  # the suite recorded as checked: only the task's file is loaded
        _probe(cache, *run, "--out", str(tmp_path / "first"))
    modules = _probe(cache, *run, "--out", str(tmp_path / "run"))
    assert "toolproof.engine.runner" in modules  # it did run
    assert (tmp_path / "run" / "summary.json").is_file()
    loaded = [m for m in NOT_IN_A_RUN if m in modules]
    assert loaded == [], f"a run of one task imported {loaded}"
