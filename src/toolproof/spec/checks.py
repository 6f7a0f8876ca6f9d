"""Success criteria of a task: the check kinds, as data.

Each check is a pydantic model discriminated by ``kind``. The scoring package
registers one evaluator per kind (``@check("state")``); this module only says
what a task file may write.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from .answer import AnswerCheck
from .hidden_checks import HiddenTestsCheck
from .lint_checks import (
    ChangeBudgetCheck,
    LintAnswerCheck,
    LintCheck,
    ProtectedCheck,
    SuppressionCheck,
)
from .patterns import check_pattern

#: A task author's pattern: it must compile (matched in bounded time, see ``patterns``).
_Regex = Annotated[str, AfterValidator(check_pattern)]


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True)

    name: str | None = Field(
        None, description="Short name used in reports and level rules; defaults to KIND_INDEX."
    )
    weight: float = Field(1.0, ge=0, description="Weight in the partial-credit fraction.")


class FileExpectation(BaseModel):
    """What a file must look like after the episode."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True)

    exists: bool = Field(True, description="Whether the file must exist (false: must be absent).")
    equals: str | None = Field(None, description="Exact content (a trailing newline is ignored).")
    contains: list[str] = Field(default_factory=list, description="Substrings that must appear.")
    not_contains: list[str] = Field(default_factory=list, description="Substrings that must not.")
    regex: _Regex | None = Field(None, description="A regular expression the content must match.")
    sha256: str | None = Field(None, description="Exact content hash (for protected files).")


class StateCheck(_Check):
    """Expected records values and files at the end of the episode."""

    kind: Literal["state"] = "state"
    records: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Record path (dots and [index], e.g. 'products.A.stock') to the expected value. "
            "A value {absent: true} means the path must not exist."
        ),
    )
    files: dict[str, str | FileExpectation] = Field(
        default_factory=dict,
        description="Workspace path to exact content (a string) or a FileExpectation.",
    )
    unchanged_elsewhere: bool = Field(
        False,
        description=(
            "Fail if anything outside the listed paths and allow_changes changed "
            "(catches collateral damage)."
        ),
    )
    allow_changes: list[str] = Field(
        default_factory=list,
        description=(
            "Glob patterns of record paths or files that may change besides what the "
            "reference solution changes; a glob admits changes to what exists, '+GLOB' also "
            "any number of new objects."
        ),
    )


class OutputCheck(_Check):
    """Checks on the agent's final answer."""

    kind: Literal["output"] = "output"
    equals: str | None = Field(None, description="The answer, trimmed, must equal this.")
    contains: list[str] = Field(default_factory=list, description="Substrings that must appear.")
    not_contains: list[str] = Field(default_factory=list, description="Substrings that must not.")
    any_of: list[str] = Field(
        default_factory=list, description="At least one of these substrings must appear."
    )
    regex: _Regex | None = Field(None, description="A regular expression the answer must match.")
    number: float | None = Field(
        None, description="A number that must appear in the answer (see tolerance)."
    )
    tolerance: float = Field(1e-6, ge=0, description="Absolute tolerance for `number`.")
    json_fields: dict[str, Any] | None = Field(
        None,
        alias="json",
        description="The answer parsed as JSON (first '{' to last '}') must have these fields.",
    )
    case_sensitive: bool = Field(False, description="Compare text case-sensitively.")
    allow_multiple: bool = Field(
        False,
        description=(
            "The task wants several values: do not fail answers that name rivals of the "
            "expected number or option (see 'Answers that commit' in docs/writing-tasks.md)."
        ),
    )

    @model_validator(mode="after")
    def _something_to_check(self) -> OutputCheck:
        if not (
            self.equals is not None
            or self.contains
            or self.not_contains
            or self.any_of
            or self.regex
            or self.number is not None
            or self.json_fields is not None
        ):
            raise ValueError(
                "an output check needs at least one of equals, contains, not_contains, "
                "any_of, regex, number, json"
            )
        return self


class CallMatch(BaseModel):
    """A tool call pattern: the tool name and a subset of its arguments."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True)

    tool: str = Field(description="Tool name.")
    args: dict[str, Any] = Field(
        default_factory=dict, description="Arguments that must be present with these values."
    )


class ProcessCheck(_Check):
    """Constraints on how the agent worked: which tools, how often, in what order."""

    kind: Literal["process"] = "process"
    must_call: list[str | CallMatch] = Field(
        default_factory=list, description="Calls that must appear (tool name or CallMatch)."
    )
    must_not_call: list[str | CallMatch] = Field(
        default_factory=list, description="Calls that must not appear."
    )
    max_calls: int | dict[str, int] | None = Field(
        None, description="Maximum number of tool calls, in total or per tool."
    )
    order: list[str] = Field(
        default_factory=list,
        description="Tools whose first successful calls must happen in this order.",
    )
    max_errors: int | None = Field(None, description="Maximum number of failed tool calls.")
    forbid_policy_violations: bool = Field(
        False,
        description=(
            "Fail if any call was refused as a policy violation (the task's policy rules, "
            "paths outside the workspace)."
        ),
    )


class EvidenceCheck(_Check):
    """Key evidence the answer must contain, and forbidden strings that zero the score."""

    kind: Literal["evidence"] = "evidence"
    require: list[str] = Field(
        default_factory=list, description="Key evidence strings that must appear."
    )
    min_hits: int | None = Field(
        None, description="How many of `require` must appear (default: all)."
    )
    forbid: list[str] = Field(
        default_factory=list,
        description="Strings (invented names, leaked secrets) whose presence zeroes the score.",
    )
    where: Literal["answer", "transcript", "tool_args"] = Field(
        "answer",
        description="Search the final answer, every assistant message, or the tool arguments.",
    )
    case_sensitive: bool = Field(False, description="Match case-sensitively.")


class CustomCheck(_Check):
    """A user's Python function, ``module:attr``, or a check registered under a name."""

    kind: Literal["custom"] = "custom"
    function: str = Field(description="'module:attr' or the name of a registered check function.")
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments passed on.")


class JudgeCheck(_Check):
    """An LLM grades the answer (or the transcript) against a rubric, sampled N times.

    The judge is called through the OpenAI SDK (any OpenAI-compatible endpoint).
    Its model, prompt, samples and their spread are recorded in the check result;
    its tokens count as judge cost, apart from the agent's.
    """

    kind: Literal["judge"] = "judge"
    rubric: str = Field(min_length=1, description="What a good answer does, in words.")
    scale: tuple[int, int] | Literal["pass_fail", "pass/fail"] = Field(
        (1, 5),
        description="[low, high] integer scale, or pass_fail for a pass/fail verdict.",
    )
    pass_threshold: float | None = Field(
        None,
        description=(
            "Mean sample score needed to pass: on the scale for [low, high] (default: high), "
            "the share of pass verdicts for pass_fail (default 0.5, a majority)."
        ),
    )
    samples: int = Field(1, ge=1, le=25, description="How many times the judge is asked.")
    model: str = Field(
        pattern=r"^openai:\S+$", description="Judge model as 'openai:MODEL' (OpenAI-compatible)."
    )
    base_url: str | None = Field(
        None, description="API base URL (default: the SDK's; judge options may override it)."
    )
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(400, ge=16, description="Longest judge reply, in tokens.")
    input: Literal["answer", "transcript"] = Field(
        "answer", description="Show the judge the final answer only, or the whole transcript."
    )
    reference: bool | str = Field(
        False,
        description="Show a reference answer: true for the solution's answer, or the text itself.",
    )
    price: tuple[float, float] | None = Field(
        None, description="USD per million input and output tokens; unset: judge cost unpriced."
    )
    timeout_s: float = Field(60.0, gt=0, description="Timeout of one judge request.")

    @model_validator(mode="after")
    def _scale_and_threshold(self) -> JudgeCheck:
        if isinstance(self.scale, tuple):
            low, high = self.scale
            if low >= high:
                raise ValueError(f"scale {list(self.scale)} must be [low, high] with low < high")
            if self.pass_threshold is not None and not low <= self.pass_threshold <= high:
                raise ValueError(
                    f"pass_threshold {self.pass_threshold:g} is outside the scale [{low}, {high}]"
                )
        elif self.pass_threshold is not None and not 0 <= self.pass_threshold <= 1:
            raise ValueError(
                f"pass_threshold {self.pass_threshold:g} must be a share in [0, 1] for pass_fail"
            )
        return self


Check = Annotated[
    StateCheck
    | OutputCheck
    | ProcessCheck
    | EvidenceCheck
    | CustomCheck
    | JudgeCheck
    | LintCheck
    | ProtectedCheck
    | SuppressionCheck
    | LintAnswerCheck
    | ChangeBudgetCheck
    | HiddenTestsCheck
    | AnswerCheck,
    Field(discriminator="kind"),
]
"""Any check a task may list under ``success``."""
