"""Sandbox settings and command policies of a task or a suite, as data.

``sandbox:`` says where ``run_command`` runs and under which limits; ``policy:``
lists calls a task forbids (a guard rail for honest mistakes: the sandbox, not
the policy, is the security boundary). Both may be given in ``suite.yaml`` (the
defaults of every task) and in a task file (which overrides field by field)::

    sandbox:
      backend: bwrap          # bwrap | process | podman | docker (default: the run's)
      wall_s: 60              # one command at most (the agent may ask for less)
      command_time_s: 300     # all commands of an episode together
      workspace_mb: 100       # passing it ends the episode (resource_limit)
    policy:
      on_violation: refuse    # or end: the first violation ends the episode
      forbid:
        - name: delete-workspace
          argv: [rm, "-r|-R|--recursive", "/|/workspace|/workspace/.git"]
          message: do not delete the repository

Every sandbox field left out (or null) is inherited: task, then suite, then the
built-in default in :data:`SANDBOX_DEFAULTS`. A limit of ``0`` turns it off.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .patterns import check_pattern

MAX_SECONDS = 7 * 24 * 3600
"""Longest time a sandbox limit may be (a week); larger ones overflow timers."""
MAX_MB = 1 << 20
"""Largest size limit in MiB (1 TiB); larger ones overflow the kernel's limits in bytes."""

SANDBOX_DEFAULTS: dict[str, Any] = {
    "wall_s": 120.0,
    "cpu_s": 120.0,
    "memory_mb": 1024,
    "pids": 128,
    "file_size_mb": 64,
    "output_bytes": 1_000_000,
    "command_time_s": 600.0,
    "workspace_mb": 512,
    "output_chars": 2000,
}
"""What a field that neither the task nor the suite sets is."""


class SandboxSpec(BaseModel):
    """Where and under which limits a task's commands run (``run_command``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_-]*$",
        description=(
            "Sandbox backend: bwrap, process (NOT isolated), podman or docker. "
            "Default: the run's --sandbox (bwrap where it works)."
        ),
    )
    image: str | None = Field(
        None, description="Container image for the podman/docker backends, e.g. 'debian:12-slim'."
    )
    wall_s: float | None = Field(
        None,
        gt=0,
        le=MAX_SECONDS,
        description="Longest wall time of one command, in seconds (default 120).",
    )
    cpu_s: float | None = Field(
        None,
        ge=0,
        le=MAX_SECONDS,
        description="CPU seconds per process of a command (default 120; 0: no limit).",
    )
    memory_mb: int | None = Field(
        None,
        ge=0,
        le=MAX_MB,
        description="Memory of one command in MiB (default 1024; 0: no limit).",
    )
    pids: int | None = Field(
        None,
        ge=0,
        le=1 << 22,
        description="Processes of one command at once (default 128; 0: no limit).",
    )
    file_size_mb: int | None = Field(
        None,
        ge=0,
        le=MAX_MB,
        description="Largest file a command may write, MiB (default 64; 0: no limit).",
    )
    output_bytes: int | None = Field(
        None,
        gt=0,
        le=1 << 30,
        description="Output kept per command; it is stopped past it (default 1 MB).",
    )
    command_time_s: float | None = Field(
        None,
        ge=0,
        le=MAX_SECONDS,
        description=(
            "Seconds all commands of an episode may take together; when spent, the episode "
            "ends with termination resource_limit (default 600; 0: no limit)."
        ),
    )
    workspace_mb: int | None = Field(
        None,
        ge=0,
        le=MAX_MB,
        description=(
            "Size of the workspace, checked after each command; passing it ends the episode "
            "with termination resource_limit (default 512; 0: no limit)."
        ),
    )
    output_chars: int | None = Field(
        None,
        gt=0,
        le=100_000_000,
        description="Characters of stdout/stderr shown per call; the rest via read_output "
        "(default 2000).",
    )
    env: dict[str, str] | None = Field(
        None, description="Environment variables added to every command."
    )
    ro_binds: dict[str, str] | None = Field(
        None,
        description=(
            "Extra host paths commands may read: absolute host path to absolute path inside "
            "(read-only; the process backend rewrites the inside paths in env values instead)."
        ),
    )
    toolenv: str | None = Field(
        None,
        description=(
            "A pinned tool environment: its env.lock.json, relative to the task file. It is "
            "set up once by `toolproof env setup SUITE` into a cache and mounted read-only at "
            "/opt/toolproof-env with its programs on PATH (see docs/lint-suite.md)."
        ),
    )

    def over(self, base: SandboxSpec | None) -> SandboxSpec:
        """These settings where given, ``base``'s elsewhere (``env``, ``ro_binds`` merged)."""
        if base is None:
            return self
        mine = self.model_dump(exclude_none=True)
        merged = {**base.model_dump(exclude_none=True), **mine}
        if base.env and self.env:
            merged["env"] = {**base.env, **self.env}
        if base.ro_binds and self.ro_binds:
            merged["ro_binds"] = {**base.ro_binds, **self.ro_binds}
        return SandboxSpec.model_validate(merged)

    def limit(self, name: str) -> Any:
        """A limit's value with ``0`` (off) turned into None; the default when unset."""
        value = getattr(self, name)
        if value is None:
            value = SANDBOX_DEFAULTS[name]
        return None if value == 0 else value


class PolicyRule(BaseModel):
    """One forbidden kind of call: a regular expression or a shell-word pattern."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = Field(None, description="Short name, recorded with each violation.")
    tools: list[str] = Field(
        default_factory=lambda: ["run_command"],
        description="Tool names (globs) the rule reads; default run_command.",
    )
    argument: str = Field(
        "command", description="The string argument the rule reads, e.g. command or path."
    )
    regex: str | None = Field(
        None, description="A Python regular expression searched for in the argument."
    )
    argv: list[str] | None = Field(
        None,
        min_length=1,
        description=(
            "Shell-word patterns over each simple command of the argument: the first matches "
            "the program, each other one some argument. 'a|b' gives alternatives; '-r' matches "
            "a short-flag cluster holding r ('-rf'), '--name' also '--name=…'; a path pattern "
            "also matches relative paths taken from /workspace."
        ),
    )
    ignore_case: bool = Field(False, description="Match case-insensitively.")
    message: str = Field(
        "this action is forbidden in this task", description="Why; shown to the agent."
    )

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return None if value is None else check_pattern(value)

    @model_validator(mode="after")
    def _one_matcher(self) -> PolicyRule:
        if (self.regex is None) == (self.argv is None):
            raise ValueError("a policy rule needs exactly one of regex or argv")
        return self

    @property
    def label(self) -> str:
        """The rule's name, or its pattern when it has none."""
        return self.name or (self.regex if self.regex is not None else " ".join(self.argv or []))


class PolicySpec(BaseModel):
    """Calls a task forbids, and what a violation does."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    forbid: list[PolicyRule] = Field(default_factory=list, description="The forbidden calls.")
    on_violation: Literal["refuse", "end"] | None = Field(
        None,
        description=(
            "refuse (default): the call is refused with error_kind policy_violation and the "
            "episode goes on; end: the episode also ends with termination policy_violation."
        ),
    )

    def over(self, base: PolicySpec | None) -> PolicySpec:
        """Both rule lists (``base``'s first); this ``on_violation`` when set."""
        if base is None:
            return self
        return PolicySpec(
            forbid=[*base.forbid, *self.forbid],
            on_violation=self.on_violation or base.on_violation,
        )


def effective_sandbox(
    run_backend: str | None, suite: SandboxSpec | None, task: SandboxSpec | None
) -> SandboxSpec:
    """An episode's sandbox settings: the task's, else the suite's, else the run's backend.

    A task or suite that names a backend needs it (an image for podman, say), so it
    wins over the run's ``--sandbox``, which is the host's choice for all others.
    """
    settings = SandboxSpec(backend=run_backend)
    for layer in (suite, task):
        if layer is not None:
            settings = layer.over(settings)
    return settings
