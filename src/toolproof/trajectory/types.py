"""Value types of an episode's record: messages, tool calls and results, steps, usage."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT_VERSION = 1
"""Version of the trajectory JSONL format; bump on incompatible change."""


class Termination(StrEnum):
    """Why an episode ended."""

    COMPLETED = "completed"
    GAVE_UP = "gave_up"
    STEP_LIMIT = "step_limit"
    TIMEOUT = "timeout"
    LOOP = "loop"
    AGENT_ERROR = "agent_error"
    INFRA_ERROR = "infra_error"
    RESOURCE_LIMIT = "resource_limit"
    POLICY_VIOLATION = "policy_violation"


class ToolKind(StrEnum):
    """Whether a tool only reads state or may change it."""

    READ = "read"
    WRITE = "write"


class ToolSchema(BaseModel):
    """A tool as an agent sees it: name, description and a JSON Schema of the arguments."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]
    kind: ToolKind = ToolKind.READ


class ToolCall(BaseModel):
    """A tool call the agent asked for."""

    id: str = Field(description="Call id, unique within the episode.")
    name: str = Field(description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Parsed arguments.")
    raw_arguments: str | None = Field(
        None, description="The arguments as the model sent them, when they were not valid JSON."
    )


class ToolResult(BaseModel):
    """What a tool call returned to the agent."""

    call_id: str
    name: str
    content: str = Field(description="The text the agent sees.")
    is_error: bool = False
    error_kind: str | None = Field(
        None,
        description=(
            "unknown_tool, invalid_arguments, tool_error, fault, timeout, "
            "policy_violation or resource_limit"
        ),
    )
    duration_s: float = 0.0


class Message(BaseModel):
    """One message of the transcript."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class Usage(BaseModel):
    """Tokens (and cost, when priced) of one model call or a sum of them."""

    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    estimated: bool = Field(False, description="True when counted offline, not by the provider.")
    cost_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="None when the model has no price."
    )

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            estimated=self.estimated or other.estimated,
            cost_usd=cost,
        )


class StateDiff(BaseModel):
    """What changed in the world between two states."""

    records: dict[str, list[Any]] = Field(
        default_factory=dict, description="Record path to [before, after]; absent is null."
    )
    files_added: list[str] = Field(default_factory=list)
    files_removed: list[str] = Field(default_factory=list)
    files_modified: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether nothing changed."""
        return not (self.records or self.files_added or self.files_removed or self.files_modified)

    def changed_paths(self) -> list[str]:
        """Every changed record path and file, sorted."""
        return sorted([*self.records, *self.files_added, *self.files_removed, *self.files_modified])


class Step(BaseModel):
    """One agent turn and the tool calls it made."""

    index: int
    message: Message = Field(description="The assistant message of this turn.")
    results: list[ToolResult] = Field(default_factory=list)
    observations: list[Message] = Field(
        default_factory=list,
        description="Messages added after the tool results (e.g. a simulated user's reply).",
    )
    usage: Usage | None = None
    agent_s: float = Field(0.0, description="Seconds spent waiting on the agent.")
    tool_s: float = Field(0.0, description="Seconds spent in tools.")
    state_digest: str = Field("", description="Digest of the world after this step.")
    diff: StateDiff | None = Field(None, description="Changes made by this step.")
    snapshot: str | None = Field(None, description="Reference of the snapshot after this step.")
    annotations: dict[str, Any] = Field(
        default_factory=dict, description="Extra per-step data (e.g. lint error count)."
    )


class Trajectory(BaseModel):
    """Everything that happened in one episode."""

    format_version: int = FORMAT_VERSION
    episode_id: str
    task_id: str
    epoch: int
    seed: int
    agent: str
    prompt: list[Message] = Field(
        description="The system and user messages the episode began with."
    )
    steps: list[Step] = Field(default_factory=list)
    final_answer: str | None = None
    termination: Termination
    error: str | None = Field(None, description="What went wrong, for error terminations.")
    started_at: str = ""
    duration_s: float = 0.0
    parent: str | None = Field(
        None, description="Episode this one continues from (replay), as 'episode_id@step'."
    )

    def transcript(self) -> list[Message]:
        """The whole conversation: prompt, then each assistant turn and its tool results."""
        messages = list(self.prompt)
        for step in self.steps:
            messages.append(step.message)
            messages.extend(
                Message(role="tool", content=r.content, tool_call_id=r.call_id, name=r.name)
                for r in step.results
            )
            messages.extend(step.observations)
        return messages

    def tool_calls(self) -> list[tuple[ToolCall, ToolResult | None]]:
        """Every call with its result, in order."""
        pairs: list[tuple[ToolCall, ToolResult | None]] = []
        for step in self.steps:
            by_id = {r.call_id: r for r in step.results}
            pairs.extend((c, by_id.get(c.id)) for c in step.message.tool_calls)
        return pairs

    def usage(self) -> Usage:
        """Total usage over the steps."""
        total = Usage()
        for step in self.steps:
            if step.usage is not None:
                total = total + step.usage
        return total
