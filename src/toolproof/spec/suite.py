"""A suite: ``suite.yaml`` (name, version, seed, canary, limits, system prompt) plus tasks."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .live import LiveSpec
from .sandbox import PolicySpec, SandboxSpec
from .task import Limits, Task

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that completes tasks by calling the tools you are given. "
    "Use the tools to find facts and make changes; do not guess what a tool would return. "
    "When the task is done: if you are offered a submit_answer tool, call it with your "
    "final answer as the typed value it asks for (this ends the task); otherwise reply "
    "with your final answer and no tool calls."
)


class SuiteConfig(BaseModel):
    """The contents of ``suite.yaml``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Suite name.")
    version: str = Field(description="Bump when a task's meaning changes.")
    description: str = Field("", description="What the suite measures.")
    seed: int = Field(0, description="Base seed; with task id and epoch it fixes every draw.")
    canary: str = Field(
        description="A unique string marking this data, so it can be kept out of training sets."
    )
    limits: Limits = Field(default_factory=Limits, description="Default limits for every task.")
    sandbox: SandboxSpec | None = Field(
        None, description="Default sandbox settings of run_command for every task."
    )
    policy: PolicySpec | None = Field(
        None, description="Calls forbidden in every task (tasks may add rules)."
    )
    live: LiveSpec | None = Field(
        None, description="Real services every task reaches through the egress proxy (live track)."
    )
    system_prompt: str = Field(DEFAULT_SYSTEM_PROMPT, description="The standard system prompt.")
    tasks: str = Field("tasks", description="Directory of task files, relative to suite.yaml.")


class Suite(BaseModel):
    """A loaded suite: its configuration and its validated tasks."""

    config: SuiteConfig
    tasks: list[Task]
    root: Path
    digest: str = Field(description="sha256 over every file of the suite directory.")
    _task_files: dict[str, Path] = PrivateAttr(default_factory=dict)

    @property
    def name(self) -> str:
        """The suite's name."""
        return self.config.name

    def task(self, task_id: str) -> Task:
        """Return the task with this id.

        Raises:
            KeyError: no such task, with the known ids in the message.
        """
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(f"no task {task_id!r} in suite {self.name!r}")

    def task_file(self, task_id: str) -> Path:
        """Return the file a task was loaded from."""
        return self._task_files[task_id]
