"""The catalog of ``toolproof``'s commands and its top-level help: read by the package (its
quick ``--help``, without click) and by the click group (``_group``), so it sits below both.
No command module: ``--help`` imports it and nothing else of the CLI.
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("toolproof.cli._run:run", "Run a suite against an agent."),
    "list": ("toolproof.cli._list:list_", "List suites, agents and tools (or a suite's tasks)."),
    "validate": ("toolproof.cli._validate:validate", "Validate suites and task files."),
    "show": ("toolproof.cli._show:show", "Show the summary of a run."),
    "schema": ("toolproof.cli._schema:schema", "Print the JSON Schema of the task format."),
    "serve-mcp": ("toolproof.cli._serve_mcp:serve_mcp", "Serve one task's tools over MCP."),
    "compare": ("toolproof.cli._compare:compare", "Compare two runs: changes and significance."),
    "leaderboard": ("toolproof.cli._leaderboard:leaderboard", "Rank N runs of one suite."),
    "baseline": ("toolproof.cli._baseline:baseline", "Save a baseline run; check runs against it."),
    "report": ("toolproof.cli._report:report", "Write a self-contained HTML report of a run."),
    "view": ("toolproof.cli._view:view", "Browse runs in a local web viewer."),
    "replay": ("toolproof.cli._replay:replay", "Continue a recorded episode from step N."),
    "snapshot": ("toolproof.cli._replay:snapshot", "Write a recorded episode's state at step N."),
    "env": ("toolproof.cli._env:env", "Set up and check a suite's pinned tool environments."),
    "check-task": ("toolproof.cli._check_task:check_task", "The quality gate of tasks."),
    "new-task": ("toolproof.cli._new_task:new_task", "Scaffold a task file to fill in."),
    "export": ("toolproof.cli._export:export", "Export a run: Inspect, OTel, CSV, Parquet, JUnit."),
}


HELP = """toolproof: executable, reproducible benchmarks for tool-using agents.

Quick start: toolproof run core --agent oracle
"""
"""The top-level help text (the click group's, and ``toolproof.cli._quick_help``'s)."""
