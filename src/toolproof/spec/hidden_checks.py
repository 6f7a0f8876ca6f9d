"""The ``hidden_tests`` check kind: software work judged by cases the agent never sees.

As in SWE-bench, the agent gets a bug report and visible failing tests; the harness
judges the fix, after the episode, with hidden cases: each is a call (or a Python
expression) and the value it must return or the exception it must raise. The sandbox,
where the agent's code runs, only *observes*: it computes each case's value and writes it
back as typed JSON (:mod:`toolproof.spec.hidden_values`). The expected values and the
comparison stay in the harness, so forging a pass means producing the right values for
inputs the agent has not seen, which is fixing the bug. The cases are split as in
SWE-bench into ``fail_to_pass`` (fail on the original code, pass on the fix) and
``pass_to_pass`` (pass on both); ``toolproof check-task`` verifies the split. The
evaluator is in ``toolproof.scoring.checks.hidden_tests``; the threat model is in
docs/software-tasks.md.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .hidden_values import ValueFormError, decode

__all__ = ["NEVER_COPIED", "HiddenCase", "HiddenTestsCheck"]

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
"""Files of the final workspace that never reach the hidden run, whatever ``source`` says:
the places where Python or a test runner picks up code or settings by itself."""

_CASE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _relative(patterns: list[str], field: str) -> list[str]:
    for pattern in patterns:
        parts = pattern.split("/")
        if not pattern or pattern.startswith("/") or ".." in parts or "\0" in pattern:
            raise ValueError(
                f"{field}: {pattern!r} must be a glob relative to /workspace, without '..'"
            )
    return patterns


class HiddenCase(BaseModel):
    """One hidden case: what to compute in the sandbox, and what it must give.

    Exactly one of ``expr`` (a Python expression, evaluated after the check's ``setup``)
    and ``call`` (a dotted name, called with ``args`` and ``kwargs``); exactly one of
    ``expect`` (the value) and ``raises`` (an exception class name).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(description="The case's name, unique in its check (letters, digits, _.-).")
    expr: str | None = Field(
        None,
        description="A Python expression computed in the sandbox after `setup` (e.g. "
        "'parse_amount(\"1,234.50\")', or a call of a function `setup` defines).",
    )
    call: str | None = Field(
        None, description="A dotted name to call instead of `expr` (e.g. 'ledger.parse_amount')."
    )
    args: list[Any] = Field(
        default_factory=list, description="Positional arguments of `call`, as typed JSON."
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of `call`, as typed JSON."
    )
    expect: Any = Field(
        None,
        description="The value it must return, as typed JSON (e.g. {$decimal: '1.50'}, "
        "{$date: '2026-01-30'}, [1, 2], 'text'). Never seen by the sandbox.",
    )
    raises: str | None = Field(
        None,
        description="Instead of `expect`: the name of the exception class it must raise "
        "(a subclass counts).",
    )
    match: str | None = Field(
        None, description="With `raises`: text the exception's message must contain."
    )
    compare: Literal["equal", "approx", "contains"] = Field(
        "equal",
        description="equal (same kind and value), approx (numbers within `tolerance`), "
        "contains (a substring of the observed text, an item of the observed list).",
    )
    tolerance: float = Field(1e-9, ge=0, description="With compare: approx.")

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _CASE_ID.fullmatch(value):
            raise ValueError(f"id: {value!r} must be letters, digits, '_', '.' or '-' (<= 80)")
        return value

    @field_validator("call")
    @classmethod
    def _call(cls, value: str | None) -> str | None:
        if value is not None and not _DOTTED.fullmatch(value):
            raise ValueError(f"call: {value!r} must be a dotted name such as 'pkg.module.func'")
        return value

    @model_validator(mode="after")
    def _shape(self) -> HiddenCase:
        if (self.expr is None) == (self.call is None):
            raise ValueError(f"case {self.id!r}: give exactly one of `expr` and `call`")
        if self.expr is not None and (self.args or self.kwargs):
            raise ValueError(f"case {self.id!r}: `args` and `kwargs` go with `call`, not `expr`")
        given = "expect" in self.model_fields_set
        if given == (self.raises is not None):
            raise ValueError(f"case {self.id!r}: give exactly one of `expect` and `raises`")
        if self.match is not None and self.raises is None:
            raise ValueError(f"case {self.id!r}: `match` goes with `raises`")
        try:
            decode(self.expect, f"case {self.id!r}: expect")
            decode(self.args, f"case {self.id!r}: args")
            decode(self.kwargs, f"case {self.id!r}: kwargs")
        except ValueFormError as exc:
            raise ValueError(str(exc)) from None
        return self

    def job(self) -> dict[str, Any]:
        """What the sandbox gets of this case: the computation, never the expectation."""
        if self.expr is not None:
            return {"id": self.id, "expr": self.expr}
        return {"id": self.id, "call": self.call, "args": self.args, "kwargs": self.kwargs}


class HiddenTestsCheck(BaseModel):
    """Hidden cases, computed by the agent's code in a clean copy of its final workspace,
    compared by the harness.

    The run builds a fresh directory: the files matching ``source`` from the final
    workspace (never those of :data:`NEVER_COPIED`), every other file as the task started
    it. A fresh interpreter in the sandbox runs ``setup`` and then each case, and writes
    each case's value (or exception) as typed JSON; a case whose interpreter crashed,
    exited or timed out is that case's failure, and the cases after it run again in a new
    interpreter. The harness compares each value with ``expect`` (or ``raises``).
    Credit is the share of ``fail_to_pass`` cases that pass; the check passes when every
    case passes; a check with only ``pass_to_pass`` cases is a guard (collateral: nothing
    that worked may break).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["hidden_tests"] = "hidden_tests"
    name: str | None = Field(
        None, description="Short name used in reports and level rules; defaults to KIND_INDEX."
    )
    weight: float = Field(1.0, ge=0, description="Weight in the partial-credit fraction.")
    setup: str = Field(
        "",
        description="Python run in the sandbox before the cases (imports, helper functions "
        "that return observations); never holds expected values. Templates are rendered.",
    )
    fail_to_pass: list[HiddenCase] = Field(
        default_factory=list,
        description="Cases that fail on the original code and pass on the reference fix: "
        "the check's credit is the share of these that pass.",
    )
    pass_to_pass: list[HiddenCase] = Field(
        default_factory=list,
        description="Cases that pass on the original code and on the fix: breaking one is "
        "collateral damage.",
    )
    source: list[str] = Field(
        default_factory=lambda: ["**/*.py"],
        description="Globs of the files taken from the final workspace (the agent's work); "
        "every other file is taken as the task started it.",
    )
    timeout_s: float = Field(
        30.0, gt=0, le=600, description="Wall time of all the check's interpreters together."
    )

    @field_validator("source")
    @classmethod
    def _globs(cls, value: list[str]) -> list[str]:
        return _relative(value, "source")

    @model_validator(mode="after")
    def _cases(self) -> HiddenTestsCheck:
        cases = self.cases()
        if not cases:
            raise ValueError("a hidden_tests check needs `fail_to_pass` or `pass_to_pass` cases")
        seen: set[str] = set()
        for case in cases:
            if case.id in seen:
                raise ValueError(f"case id {case.id!r} is used twice in this check")
            seen.add(case.id)
        return self

    def cases(self) -> list[HiddenCase]:
        """Every case, fail-to-pass first."""
        return [*self.fail_to_pass, *self.pass_to_pass]
