"""The task format, version 1: one task per YAML or JSON file.

A task says what the agent is asked (``description``), which tools it may use,
the world it starts in, how parameters are drawn from the seed, which tool
calls fail on purpose, and how success is decided (``success``, ``levels``),
together with a reference ``solution`` that proves the task solvable.
"""

from __future__ import annotations

import contextlib
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ._yamlsrc import SourceMap
from .answer import ANSWER_TOOL, AnswerCheck, answer_problems, same_answer
from .checks import Check
from .live import LiveSpec
from .sandbox import PolicySpec, SandboxSpec
from .user import AttackSpec, UserSpec


class TaskType(StrEnum):
    """What kind of tool use the task exercises."""

    SINGLE_TOOL = "single_tool"
    MULTI_STEP = "multi_step"
    CONDITIONAL = "conditional"
    EXPLORATION = "exploration"
    TOOL_LEARNING = "tool_learning"


class Category(StrEnum):
    """Which situation the task puts the agent in."""

    NORMAL = "normal"
    EDGE = "edge"
    TOOL_ERROR = "tool_error"
    AMBIGUOUS = "ambiguous"
    SECURITY = "security"


MAX_SECONDS = 7 * 24 * 3600
"""Longest time limit a task file may set (a week); larger ones overflow timers."""
MAX_STEPS = 100_000
"""Most agent turns a task file may allow."""


class Limits(BaseModel):
    """Budgets that end an episode."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_steps: int = Field(30, ge=1, le=MAX_STEPS, description="Maximum agent turns.")
    step_timeout_s: float = Field(
        120.0, gt=0, le=MAX_SECONDS, description="Wall time for one agent turn."
    )
    total_timeout_s: float = Field(
        900.0, gt=0, le=MAX_SECONDS, description="Wall time for the whole episode."
    )
    tool_timeout_s: float = Field(
        60.0, gt=0, le=MAX_SECONDS, description="Wall time for one tool call."
    )
    loop_threshold: int = Field(
        3,
        ge=2,
        le=1000,
        description="Same call on the same state this many times ends the episode.",
    )


class LimitsOverride(BaseModel):
    """Task-level changes to the suite's default limits."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_steps: int | None = Field(None, ge=1, le=MAX_STEPS, description="Maximum agent turns.")
    step_timeout_s: float | None = Field(
        None, gt=0, le=MAX_SECONDS, description="Wall time for one agent turn."
    )
    total_timeout_s: float | None = Field(
        None, gt=0, le=MAX_SECONDS, description="Wall time for the episode."
    )
    tool_timeout_s: float | None = Field(
        None, gt=0, le=MAX_SECONDS, description="Wall time for one tool call."
    )
    loop_threshold: int | None = Field(
        None, ge=2, le=1000, description="Repeats that count as a loop."
    )

    def apply(self, base: Limits) -> Limits:
        """Return ``base`` with the fields set here replaced."""
        return base.model_copy(update=self.model_dump(exclude_none=True))


class InlineResponse(BaseModel):
    """One deterministic behaviour of an inline tool: when the arguments match, do this."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    when: dict[str, Any] = Field(
        default_factory=dict, description="Arguments that must equal these values (empty: any)."
    )
    result: Any = Field(None, description="The result returned to the agent.")
    error: str | None = Field(None, description="Return this error message instead of a result.")
    effects: dict[str, Any] = Field(
        default_factory=dict, description="Record paths to set to these values (a write)."
    )


class InlineTool(BaseModel):
    """A tool defined in the task itself, with a JSON Schema and declared behaviour."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", description="Tool name.")
    description: str = Field(description="What the tool does, as the agent sees it.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments (an object schema).",
    )
    kind: Literal["read", "write"] = Field("read", description="Whether it changes state.")
    responses: list[InlineResponse] = Field(
        default_factory=list, description="Behaviours tried in order; the first match applies."
    )
    default_error: str = Field(
        "no result for these arguments",
        description="Error returned when no response matches.",
    )
    handler: str | None = Field(
        None,
        description=(
            "A registered tool handler that performs the call instead of responses "
            "(code a suite provider registers, e.g. bfcl.call)."
        ),
    )


class ParamSpec(BaseModel):
    """How one parameter is drawn from the seed. Exactly one source must be given."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    int_range: tuple[int, int] | None = Field(
        None, alias="int", description="Uniform integer in [low, high]."
    )
    float_range: tuple[float, float] | None = Field(
        None, alias="float", description="Uniform float in [low, high], see decimals."
    )
    decimals: int = Field(2, ge=0, le=15, description="Rounding for float parameters.")
    choice: list[Any] | None = Field(None, description="One of these values.")
    sample: list[Any] | None = Field(None, description="Draw `k` distinct values from this list.")
    k: int | None = Field(None, ge=1, description="How many values `sample` draws.")
    shuffle: list[Any] | None = Field(None, description="This list in a random order.")
    expr: str | None = Field(
        None, description="An expression over earlier parameters, e.g. 'a + b'."
    )
    value: Any = Field(None, description="A constant.")

    @model_validator(mode="after")
    def _exactly_one(self) -> ParamSpec:
        given = [
            name
            for name in ("int_range", "float_range", "choice", "sample", "shuffle", "expr")
            if getattr(self, name) is not None
        ]
        if self.value is not None:
            given.append("value")
        given = [name.removesuffix("_range") for name in given]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of int, float, choice, sample, shuffle, expr, value"
                f" (got {', '.join(given) or 'none'})"
            )
        if self.sample is not None and (self.k is None or self.k > len(self.sample)):
            raise ValueError("sample needs k between 1 and the length of the list")
        for bounds in (self.int_range, self.float_range):
            if bounds is not None and bounds[0] > bounds[1]:
                raise ValueError(f"the range {list(bounds)} is empty; write it as [low, high]")
        if self.choice is not None and not self.choice:
            raise ValueError("choice needs at least one value")
        return self


class Fault(BaseModel):
    """A tool call that fails on purpose, in a stated way (for tool_error tasks)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    tool: str = Field(description="The tool whose calls fail.")
    when: dict[str, Any] = Field(
        default_factory=dict, description="Only calls whose arguments include these values."
    )
    calls: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1],
        description="Which matching calls fail, counted from 1 (default: the first).",
    )
    error: Literal["timeout", "server_error", "rate_limit", "malformed", "stale", "custom"] = Field(
        "server_error", description="How the call fails."
    )
    message: str | None = Field(None, description="Error text shown to the agent (custom).")
    result: Any = Field(None, description="The bogus result returned for malformed or stale.")


class LevelRule(BaseModel):
    """When an episode reaches a level."""

    model_config = ConfigDict(extra="forbid")

    checks: list[str] | Literal["all"] = Field(
        "all", description="Names of checks that must pass, or 'all'."
    )
    min_fraction: float | None = Field(
        None, ge=0, le=1, description="Minimum weighted share of checks that pass."
    )
    max_tool_calls: int | None = Field(None, ge=0, description="At most this many tool calls.")
    max_steps: int | None = Field(None, ge=1, description="At most this many agent turns.")


class Levels(BaseModel):
    """Rules for perfect / acceptable / partial; anything else is fail."""

    model_config = ConfigDict(extra="forbid")

    perfect: LevelRule | None = Field(None, description="Default: all checks, efficient.")
    acceptable: LevelRule | None = Field(None, description="Default: all checks pass.")
    partial: LevelRule | None = Field(None, description="Default: half the weight passes.")


class SolutionCall(BaseModel):
    """One reference tool call."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    tool: str = Field(description="Tool name.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments.")
    when: str | None = Field(
        None, description="An expression over the params; the call is skipped when false."
    )


class SolutionTurn(BaseModel):
    """The reference play of one further user turn: its calls, then the reply ending it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True)

    calls: list[SolutionCall | list[SolutionCall]] = Field(
        default_factory=list, description="Calls in order; a nested list is one parallel turn."
    )
    answer: str = Field("", description="The text reply that ends this user turn.")


class Solution(BaseModel):
    """The reference solution: tool calls (a list = calls made together) and the answer."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True)

    calls: list[SolutionCall | list[SolutionCall]] = Field(
        default_factory=list, description="Calls in order; a nested list is one parallel turn."
    )
    answer: str = Field(
        "", description="The final answer (with user_turns or a conversation: the first reply)."
    )
    submit: Any = Field(
        None,
        description=(
            "The typed value the reference hands in with submit_answer (required when the "
            "task has an answer check; it must equal the check's expected value)."
        ),
    )
    turns: list[SolutionTurn] = Field(
        default_factory=list,
        description=(
            "With user_turns, or a user in conversation: the reference play after each "
            "further user message, in order."
        ),
    )


class UserTurn(BaseModel):
    """A further user message, sent when the agent ends the previous turn with a text reply."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    content: str = Field(description="The user's message.")
    tools: list[str] = Field(
        default_factory=list,
        description=(
            "Names of the task's tools first offered at this turn (hidden before it, "
            "e.g. a function the user adds later)."
        ),
    )


class WorldSpec(BaseModel):
    """The initial state of the world."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    records: dict[str, Any] = Field(
        default_factory=dict, description="In-memory JSON state: collection name to its data."
    )
    files: dict[str, str] = Field(
        default_factory=dict, description="Workspace files: path (under /workspace) to content."
    )
    fixtures: str | None = Field(
        None, description="A directory, relative to the task file, copied into the workspace."
    )
    workspace: bool | None = Field(
        None, description="Force a workspace even with no files (default: when files are given)."
    )

    @property
    def needs_workspace(self) -> bool:
        """Whether the episode needs a real directory."""
        if self.workspace is not None:
            return self.workspace
        return bool(self.files or self.fixtures)


class Task(BaseModel):
    """One task of a suite."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", description="Unique id within the suite.")
    description: str = Field(description="The prompt the agent sees.")
    type: TaskType = Field(description="Kind of tool use exercised.")
    category: Category = Field(Category.NORMAL, description="Situation the agent is put in.")
    difficulty: int = Field(1, ge=1, le=3, description="1 (one call) to 3 (10+ calls, branching).")
    domain: str = Field("general", description="Domain, e.g. files, shop, banking.")
    tags: list[str] = Field(default_factory=list, description="Free-form tags for breakdowns.")
    tools: list[str | InlineTool] = Field(
        description="Tool names from toolkits ('inventory.*' for a whole toolkit) or inline tools."
    )
    world: WorldSpec = Field(default_factory=WorldSpec, description="The initial state.")
    params: dict[str, ParamSpec] = Field(
        default_factory=dict, description="Parameters drawn from the seed, used as {{name}}."
    )
    faults: list[Fault] = Field(default_factory=list, description="Declared tool failures.")
    user: UserSpec | None = Field(
        None,
        description=(
            "A simulated user: the agent questions them with the ask_user tool, or talks "
            "with them (mode: conversation)."
        ),
    )
    user_turns: list[UserTurn] = Field(
        default_factory=list,
        description=(
            "Further user messages: each is sent when the agent replies without a tool call, "
            "and the episode ends after the reply to the last."
        ),
    )
    attack: AttackSpec | None = Field(
        None, description="An attack planted in the world, scored apart from the task."
    )
    limits: LimitsOverride = Field(
        default_factory=LimitsOverride, description="Changes to the suite's limits."
    )
    sandbox: SandboxSpec | None = Field(
        None, description="Where run_command runs and its limits (overrides the suite's)."
    )
    policy: PolicySpec | None = Field(
        None, description="Calls this task forbids (added to the suite's policy)."
    )
    live: LiveSpec | None = Field(
        None, description="Real services this task reaches through the egress proxy (live track)."
    )
    success: list[Check] = Field(min_length=1, description="Checks that decide success.")
    levels: Levels = Field(default_factory=Levels, description="Graded level rules.")
    solution: Solution = Field(description="The reference solution.")
    _template: dict[str, Any] | None = PrivateAttr(None)
    _render_plan: Any = PrivateAttr(None)  # the template compiled once (render._plan)

    @field_validator("user_turns")
    @classmethod
    def _not_in_conversation(cls, turns: list[UserTurn], info: ValidationInfo) -> list[UserTurn]:
        user = info.data.get("user")
        if turns and isinstance(user, UserSpec) and user.mode == "conversation":
            raise ValueError(
                "user.mode is 'conversation' and the task has user_turns: in a "
                "conversation the user writes the further messages; drop user_turns "
                "or set user.mode: ask"
            )
        return turns

    @model_validator(mode="after")
    def _turns_fit(self) -> Task:
        if self.user is not None and self.user.mode == "conversation":
            if len(self.solution.turns) > self.user.max_turns:
                raise ValueError(
                    f"solution.turns has {len(self.solution.turns)} entries but the user "
                    f"sends at most user.max_turns={self.user.max_turns} messages after the "
                    "opening; give at most one per user message"
                )
            return self
        if len(self.solution.turns) > len(self.user_turns):
            raise ValueError(
                f"solution.turns has {len(self.solution.turns)} entries but the task has "
                f"{len(self.user_turns)} user_turns; give at most one per user turn"
            )
        return self

    @model_validator(mode="after")
    def _answer_fits(self) -> Task:
        if any(isinstance(t, InlineTool) and t.name == ANSWER_TOOL for t in self.tools):
            raise ValueError(
                f"an inline tool is named {ANSWER_TOOL!r}: the name is reserved for the typed "
                "answer (declare an answer check instead); rename the tool"
            )
        answers = [c for c in self.success if isinstance(c, AnswerCheck)]
        if not answers:
            if self.solution.submit is not None:
                raise ValueError(
                    "solution.submit is set but the task has no answer check: add one "
                    "(kind: answer) or drop solution.submit"
                )
            return self
        if len(answers) > 1:
            raise ValueError(
                f"success has {len(answers)} answer checks; a task has one typed answer "
                "(use a list type for several values)"
            )
        conversation = self.user is not None and self.user.mode == "conversation"
        if self.user_turns or conversation:
            raise ValueError(
                "a typed answer (kind: answer) ends the episode when it is handed in, so a task "
                "with user_turns or a user in conversation cannot have one: check its replies "
                "with output, evidence or judge checks"
            )
        check = answers[0]
        submit = self.solution.submit
        if submit is None:
            raise ValueError(
                "the task has an answer check but solution.submit is missing: give the value "
                f"the reference hands in with {ANSWER_TOOL} (expected: {check.expected!r})"
            )
        if check.answer_kind == "number" and isinstance(submit, str):
            with contextlib.suppress(ValueError):  # a rendered template: "12.5"
                submit = self.solution.submit = float(submit)
        problems = answer_problems(check.type, submit)
        if problems:
            raise ValueError(
                f"solution.submit {submit!r} does not fit the answer type: " + "; ".join(problems)
            )
        if not same_answer(check, submit):
            raise ValueError(
                f"solution.submit {submit!r} is not the answer check's expected "
                f"{check.expected!r} (compare: {check.comparison})"
            )
        return self

    @property
    def answer(self) -> AnswerCheck | None:
        """The task's typed answer (its ``answer`` check), or None for a free-text task."""
        for check in self.success:
            if isinstance(check, AnswerCheck):
                return check
        return None

    def hidden_tools(self, turn: int) -> set[str]:
        """Tool names not yet offered at user turn ``turn`` (0: the first prompt)."""
        return {name for later in self.user_turns[turn:] for name in later.tools}

    _source: SourceMap | None = PrivateAttr(None)
    _drawn: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def source(self) -> SourceMap | None:
        """Where each field of the task file is (its lines), when loaded from a file."""
        return self._source

    @property
    def checked_params(self) -> list[dict[str, Any]]:
        """The parameters drawn for each epoch the loader rendered and validated."""
        return self._drawn

    @property
    def template(self) -> dict[str, Any]:
        """The task as written, before parameters were substituted."""
        if self._template is not None:
            return self._template
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
