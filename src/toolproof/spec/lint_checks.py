"""Check kinds of tasks that fix linter errors in a real project (the ``lint`` suite).

``lint`` runs the linter on the final state, in the sandbox, with the task's
pinned tools; the others guard against the ways to make a linter quiet without
fixing anything. Their evaluators are in ``toolproof.scoring.checks.lint``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChangeBudgetCheck",
    "LintAnswerCheck",
    "LintCheck",
    "ProtectedCheck",
    "SuppressionCheck",
]

IGNORED_CHANGES = ["**/__pycache__/**", "**/*.pyc", ".ruff_cache/**", "**/.eslintcache"]
"""Files that running tools may leave behind; they never count as the agent's changes."""


class _GateCheck(BaseModel):
    """Fields every check has (as in ``checks._Check``); gates weigh nothing by default."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = Field(
        None, description="Short name used in reports and level rules; defaults to KIND_INDEX."
    )
    weight: float = Field(0.0, ge=0, description="Weight in the partial-credit fraction.")


class LintCheck(_GateCheck):
    """The linter, run by the harness on the final state, finds nothing.

    Partial credit is the share of the starting errors that are gone (the starting
    count is recorded in the task's version file and checked at set-up).
    """

    kind: Literal["lint"] = "lint"
    weight: float = Field(1.0, ge=0, description="Weight in the partial-credit fraction.")
    linter: Literal["ruff", "eslint"] = Field(description="Which linter: ruff or eslint.")
    config: str | None = Field(
        None,
        description="The project's linter configuration, passed explicitly "
        "(default pyproject.toml for ruff, eslint.config.js for eslint).",
    )
    paths: list[str] = Field(
        default_factory=lambda: ["."], min_length=1, description="What the linter checks."
    )
    verify: list[str] = Field(
        default_factory=list,
        description="Commands that must still succeed on the final state (the project's "
        "tests), run in the sandbox; a failure makes the check fail with no credit.",
    )
    timeout_s: float = Field(120.0, gt=0, description="Wall time of each harness command.")


class ProtectedCheck(_GateCheck):
    """Files that must stay byte for byte as they were: none changed, removed or added.

    Compared by sha256 with the initial state. A violation vetoes the episode.
    """

    kind: Literal["protected"] = "protected"
    paths: list[str] = Field(
        min_length=1,
        description="Glob patterns relative to /workspace (e.g. 'pyproject.toml', "
        "'**/ruff.toml'); a new file matching one is a violation too.",
    )
    veto: bool = Field(True, description="A violation fails the episode whatever else passed.")


class SuppressionCheck(_GateCheck):
    """No suppression added, no source file deleted or emptied (compared with the start).

    Suppressions are counted per file at the start and at the end: ``# noqa``,
    ``# type: ignore``, ``# ruff: noqa``, ``eslint-disable``, inline ``/* eslint */``
    configuration, ``@ts-ignore``, ``@ts-expect-error``, ``@ts-nocheck`` and more.
    A violation vetoes the episode.
    """

    kind: Literal["no_suppressions"] = "no_suppressions"
    sources: list[str] = Field(
        default_factory=lambda: ["**/*.py", "**/*.ts", "**/*.tsx", "**/*.js", "**/*.jsx"],
        description="Glob patterns of the source files that must not be deleted or emptied.",
    )
    markers: list[str] = Field(
        default_factory=list, description="More regular expressions that count as suppressions."
    )
    veto: bool = Field(True, description="A violation fails the episode whatever else passed.")


class LintAnswerCheck(_GateCheck):
    """The final answer is JSON that tells the truth about the changed files and what is left.

    Parsed tolerantly (first ``{`` to last ``}``), validated strictly:
    ``{"changed_files": [paths], "remaining_errors": N}`` and nothing else, where the
    files are the source files that changed and N is the harness's final count.
    """

    kind: Literal["lint_answer"] = "lint_answer"


class ChangeBudgetCheck(_GateCheck):
    """At most so many files changed (added, modified or removed), caches not counted."""

    kind: Literal["change_budget"] = "change_budget"
    max_files: int = Field(ge=0, description="Most files the episode may change.")
    ignore: list[str] = Field(
        default_factory=lambda: list(IGNORED_CHANGES),
        description="Glob patterns of files that do not count (tool caches).",
    )
