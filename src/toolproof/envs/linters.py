"""Linters as the harness runs them, and error counts read from any linter output.

The harness's own run (:func:`harness_argv`) cannot be fooled by the workspace:
the linter configuration is named explicitly (a config an agent adds in a
subdirectory is not read), suppression comments are ignored (``--ignore-noqa``,
``--no-inline-config``), ignore files are not honoured, warnings count, and the
project's lint script is not used. Output is JSON, parsed by :func:`parse_report`.

:func:`count_in_output` reads the error count from what an agent's own command
printed (text or JSON, ruff or ESLint, through ``npm run lint`` or a script): the
points of the lint-error curve.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_CONFIG",
    "LintReport",
    "Linter",
    "count_in_output",
    "harness_argv",
    "parse_report",
]

Linter = Literal["ruff", "eslint"]
DEFAULT_CONFIG: dict[str, str] = {"ruff": "pyproject.toml", "eslint": "eslint.config.js"}
"""The configuration file each linter is run with unless a check names another."""

_RUFF_CLEAN = re.compile(r"All checks passed!")
_RUFF_FOUND = re.compile(r"Found (\d+) errors?(?: \((\d+) fixed, (\d+) remaining\))?")
_ESLINT_PROBLEMS = re.compile(r"✖ (\d+) problems? \(\d+ errors?, \d+ warnings?\)")
_ESLINT_CALL = re.compile(
    r"(?:^|[;&|(]\s*)(?:npx\s+)?eslint\b|\b(?:npm|pnpm|yarn)\s+(?:run\s+)?lint\b"
)
_LINT_WORD = re.compile(r"\b(?:ruff|eslint|lint)\b")


def harness_argv(linter: Linter, config: str, paths: list[str]) -> list[str]:
    """The command line the harness lints the final state with (output: JSON)."""
    if linter == "ruff":
        argv = ["ruff", "check", "--no-cache", "--ignore-noqa", "--no-respect-gitignore"]
        return [*argv, "--config", config, "--output-format", "json", *paths]
    argv = ["eslint", "--no-inline-config", "--max-warnings", "0", "--config", config]
    return [*argv, "--format", "json", *paths]


@dataclass(frozen=True)
class LintReport:
    """One lint run as the harness read it.

    Attributes:
        errors: Problems found (errors and warnings), None when the linter failed to run.
        exit_code: The linter's exit status.
        by_rule: Problems per rule code (``syntax-error`` for parse failures).
        by_file: Problems per file, relative to /workspace.
        detail: Why the linter failed, when it did.
    """

    errors: int | None
    exit_code: int | None
    by_rule: dict[str, int] = field(default_factory=dict)
    by_file: dict[str, int] = field(default_factory=dict)
    detail: str = ""

    @property
    def clean(self) -> bool:
        """The linter ran, exited 0 and found nothing."""
        return self.exit_code == 0 and self.errors == 0


def _relative(path: str) -> str:
    return path.removeprefix("/workspace/")


def _json_list(text: str) -> list[Any] | None:
    start = text.find("[")
    if start < 0:
        return None
    try:
        data = json.loads(text[start : text.rfind("]") + 1])
    except ValueError:
        return None
    return data if isinstance(data, list) else None


def parse_report(linter: Linter, exit_code: int | None, stdout: str, stderr: str) -> LintReport:
    """Read the harness's JSON run; a run whose output is not a report failed to lint."""
    items = _json_list(stdout)
    if items is None or exit_code not in (0, 1):
        why = (stderr or stdout).strip()[-800:] or "no output"
        return LintReport(None, exit_code, detail=f"the linter failed (exit {exit_code}): {why}")
    rules: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for item in items:
        if not isinstance(item, dict):
            continue
        if linter == "ruff":
            rules[str(item.get("code") or "syntax-error")] += 1
            files[_relative(str(item.get("filename", "?")))] += 1
            continue
        for message in item.get("messages", []):
            rule = message.get("ruleId") or ("syntax-error" if message.get("fatal") else "-")
            rules[str(rule)] += 1
            files[_relative(str(item.get("filePath", "?")))] += 1
    return LintReport(sum(rules.values()), exit_code, dict(rules), dict(files))


def _count_json(items: list[Any]) -> int | None:
    if not items:
        return 0
    if all(isinstance(i, dict) and "filePath" in i for i in items):  # ESLint
        return sum(int(i.get("errorCount", 0)) + int(i.get("warningCount", 0)) for i in items)
    if all(isinstance(i, dict) and "filename" in i for i in items):  # ruff
        return len(items)
    return None


def count_in_output(command: str, exit_code: int | None, stdout: str, stderr: str) -> int | None:
    """The number of lint problems an agent's command reported, or None if it ran no linter.

    Args:
        command: The command line the agent ran.
        exit_code: Its exit status (None when it was stopped).
        stdout: Its standard output (the part the agent saw is enough: counts are at the end).
        stderr: Its standard error.
    """
    if exit_code is None or not _LINT_WORD.search(command):
        return None
    text = f"{stdout}\n{stderr}"
    found = _RUFF_FOUND.findall(text)
    if found:
        total, _, remaining = found[-1]
        return int(remaining or total)
    problems = _ESLINT_PROBLEMS.findall(text)
    if problems:
        return int(problems[-1])
    if _RUFF_CLEAN.search(text):
        return 0
    items = _json_list(stdout)
    if items is not None and exit_code in (0, 1):
        counted = _count_json(items)
        if counted is not None:
            return counted
    if exit_code == 0 and _ESLINT_CALL.search(command):
        return 0  # ESLint prints nothing when the code is clean
    return None
