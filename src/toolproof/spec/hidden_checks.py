"""The ``hidden_tests`` check kind: software work judged by tests the agent never sees.

As in SWE-bench, the agent gets a bug report and visible failing tests; the harness
judges the fix, after the episode, with hidden tests that it copies fresh into a
clean copy of the final workspace and runs with ``python3 -m unittest`` semantics in
the sandbox. Its evaluator is in ``toolproof.scoring.checks.hidden_tests``; the
anti-tamper rules are in docs/software-tasks.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["NEVER_COPIED", "HiddenTestsCheck"]

NEVER_COPIED = [
    "**/conftest.py",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/pytest.ini",
    "**/tox.ini",
    "**/setup.cfg",
    "**/__pycache__/**",
    "**/*.pyc",
    ".git/**",
]
"""Files of the final workspace that never reach the hidden-test run, whatever ``source`` says:
the places where Python or a test runner picks up code or settings by itself."""


def _relative(patterns: list[str], field: str) -> list[str]:
    for pattern in patterns:
        parts = pattern.split("/")
        if not pattern or pattern.startswith("/") or ".." in parts or "\0" in pattern:
            raise ValueError(
                f"{field}: {pattern!r} must be a glob relative to /workspace, without '..'"
            )
    return patterns


class HiddenTestsCheck(BaseModel):
    """Hidden tests, run by the harness on a clean copy of the final workspace, pass.

    The run (once per episode for every check with the same ``files``, ``visible``,
    ``source``, ``dir`` and ``timeout_s``) builds a fresh directory: the files matching
    ``source`` from the final workspace (never those of :data:`NEVER_COPIED`, never the
    ``visible`` test files, nothing under ``dir``), every other file as the task started
    it, the ``visible`` test files as the task started them, and the hidden ``files``
    under ``dir``. Each check scores the tests whose ids start with one of ``select``:
    the share passing is its credit. The same tests are run on the initial workspace;
    a check whose selected tests all passed there is a guard (collateral: nothing that
    worked may break). Tripwire tests the harness adds catch a runner that was tampered
    with; a tampered run vetoes the episode.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["hidden_tests"] = "hidden_tests"
    name: str | None = Field(
        None, description="Short name used in reports and level rules; defaults to KIND_INDEX."
    )
    weight: float = Field(1.0, ge=0, description="Weight in the partial-credit fraction.")
    files: dict[str, str] = Field(
        default_factory=dict,
        description="The hidden test modules: file name (test_*.py, placed under `dir`) to "
        "content. Templates are rendered, so the expected values can follow the seed.",
    )
    visible: list[str] = Field(
        default_factory=list,
        description="Globs of the workspace's own test modules to run too, in the version "
        "the task started with (an edited visible test never counts).",
    )
    select: list[str] = Field(
        default_factory=list,
        description="Test id prefixes this check scores (MODULE.CLASS.METHOD, e.g. "
        "'test_hidden_parse.ParseTest'); empty: every test of the run.",
    )
    source: list[str] = Field(
        default_factory=lambda: ["**/*.py"],
        description="Globs of the files taken from the final workspace (the agent's work); "
        "every other file is taken as the task started it.",
    )
    dir: str = Field(
        "tests/hidden",
        description="Where the hidden tests are placed, relative to /workspace; whatever "
        "the agent left there is dropped.",
    )
    timeout_s: float = Field(60.0, gt=0, le=600, description="Wall time of the test run.")

    @field_validator("visible", "source")
    @classmethod
    def _globs(cls, value: list[str], info: object) -> list[str]:
        return _relative(value, getattr(info, "field_name", "source"))

    @field_validator("dir")
    @classmethod
    def _dir(cls, value: str) -> str:
        clean = value.strip("/")
        if not clean or any(not p or p == "." for p in clean.split("/")):
            raise ValueError(f"dir: {value!r} must name a folder below /workspace")
        _relative([clean], "dir")
        return clean

    @field_validator("files")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            stem = name.removesuffix(".py")
            if not name.endswith(".py") or not stem.isidentifier() or not stem.startswith("test"):
                raise ValueError(
                    f"files: {name!r} must be a module file name like 'test_parse.py' "
                    "(no folders: the files are placed under `dir`)"
                )
        return value

    @model_validator(mode="after")
    def _something_to_run(self) -> HiddenTestsCheck:
        if not self.files and not self.visible:
            raise ValueError("a hidden_tests check needs `files` (hidden tests) or `visible`")
        return self
