"""Sandbox settings and command policies of a task or a suite, as data.

``sandbox:`` says where ``run_command`` runs and under which limits; ``policy:``
lists calls a task forbids (a guard rail for honest mistakes: the sandbox, not
the policy, is the security boundary). Both may be given in ``suite.yaml`` (for
every task) and in a task file (the sandbox: the stronger of the two per field; the
policy: both rule lists)::

    sandbox:
      backend: bwrap          # podman | docker | container (process: --run-commands-on-host)
      wall_s: 60              # one command at most (the agent may ask for less)
      command_time_s: 300     # all commands of an episode together
      workspace_mb: 100       # passing it ends the episode (resource_limit)
    policy:
      on_violation: refuse    # or end: the first violation ends the episode
      forbid:
        - name: delete-workspace
          argv: [rm, "-r|-R|--recursive", "/|/workspace|/workspace/.git"]
          message: do not delete the repository

Isolation is the run's decision (invariant 9): a task or suite may ask for a
stronger sandbox, never a weaker one. :func:`effective_sandbox` is the one place an
episode's settings are computed, field by field, as the stronger of the run's, the
suite's and the task's: the smaller of each limit (none above the run's ceiling in
:data:`RUN_CEILINGS`, none switched off), an isolated backend over ``process``, and
``process`` only when the person running toolproof said so
(``--run-commands-on-host``). A limit nobody sets is the default in
:data:`SANDBOX_DEFAULTS`. The format has no field for the network, seccomp, the
user, capabilities or writable paths: those are the backend's, never a task's
(``extra="forbid"`` refuses them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .errors import Problem, SpecError
from .paths import ro_bind_problem
from .patterns import check_pattern

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

RUN_CEILINGS: dict[str, float] = {
    "wall_s": 3600.0,
    "cpu_s": 3600.0,
    "memory_mb": 16384,
    "pids": 4096,
    "file_size_mb": 16384,
    "output_bytes": 64 * 1024 * 1024,
    "command_time_s": 86400.0,
    "workspace_mb": 65536,
}
"""The run's limits: the most a task or suite may ask for (it may always ask for less).

A value above one, or ``0`` (which would switch the limit off), is refused when the
file loads; :func:`effective_sandbox` holds to them for settings made in code too.
"""

UNISOLATED_BACKENDS = frozenset({"process"})
"""Backends that run commands on the host without isolation (``--run-commands-on-host``)."""

HOST_OPTION = "--run-commands-on-host"
"""The command-line option by which the person running toolproof allows unisolated commands."""


class SandboxSpec(BaseModel):
    """Where and under which limits a task's commands run (``run_command``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_-]*$",
        description=(
            "Sandbox backend: bwrap, podman, docker or container (podman, else docker) "
            "(isolated), or process (NOT isolated: refused unless the run is given "
            "--run-commands-on-host). Default: the run's --sandbox (bwrap)."
        ),
    )
    image: str | None = Field(
        None,
        description=(
            "Container image for the podman/docker backends, e.g. 'localhost/toolproof-py:1': "
            "built or imported on this host (it is never pulled)."
        ),
    )
    wall_s: float | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["wall_s"],
        description="Longest wall time of one command, in seconds (default 120, at most 3600).",
    )
    cpu_s: float | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["cpu_s"],
        description="CPU seconds per process of a command (default 120, at most 3600).",
    )
    memory_mb: int | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["memory_mb"],
        description="Memory of one command in MiB (default 1024, at most 16384).",
    )
    pids: int | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["pids"],
        description="Processes of one command at once (default 128, at most 4096).",
    )
    file_size_mb: int | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["file_size_mb"],
        description="Largest file a command may write, MiB (default 64, at most 16384).",
    )
    output_bytes: int | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["output_bytes"],
        description="Output kept per command; it is stopped past it (default 1 MB, at most "
        "64 MiB).",
    )
    command_time_s: float | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["command_time_s"],
        description=(
            "Seconds all commands of an episode may take together; when spent, the episode "
            "ends with termination resource_limit (default 600, at most 86400)."
        ),
    )
    workspace_mb: int | None = Field(
        None,
        gt=0,
        le=RUN_CEILINGS["workspace_mb"],
        description=(
            "Size of the workspace, checked after each command; passing it ends the episode "
            "with termination resource_limit (default 512, at most 65536)."
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

    @field_validator("env", "ro_binds", mode="after")
    @classmethod
    def _os_strings(cls, value: dict[str, str] | None, info: ValidationInfo) -> Any:
        """Every name, value and path must be one the operating system can hold: no NUL
        byte, no lone surrogate (not UTF-8), an env name neither empty nor with ``=``. Said
        here, at load, with the file and field; not found out by a command's start."""
        names = ("host path", "inside path") if info.field_name == "ro_binds" else ("name", "value")
        for key, text in (value or {}).items():
            for what, part in zip(names, (key, text), strict=True):
                problem = _os_text_problem(part)
                if problem is not None:
                    raise ValueError(
                        f"{info.field_name} {what} {key[:40]!r}: {problem}; use plain text"
                    )
            if info.field_name == "env" and (not key or "=" in key):
                raise ValueError(
                    f"env name {key[:40]!r} must be non-empty and without '=' (NAME: value)"
                )
        return value

    @field_validator("image", "toolenv", mode="after")
    @classmethod
    def _os_string(cls, value: str | None, info: ValidationInfo) -> str | None:
        problem = None if value is None else _os_text_problem(value)
        if problem is not None:
            raise ValueError(f"{info.field_name}: {problem}; use plain text")
        return value

    @field_validator(*RUN_CEILINGS, mode="before")
    @classmethod
    def _no_weaker_limit(cls, value: Any, info: ValidationInfo) -> Any:
        """A limit may be made stronger, never switched off or raised past the run's."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value  # the field's own type check says what is wrong
        ceiling = RUN_CEILINGS[str(info.field_name)]
        if value == 0:
            raise ValueError(
                "0 would switch this limit off, and a task or suite may only make the sandbox "
                f"stronger; give a limit up to {ceiling:g}, or leave it out for the default"
            )
        if value > ceiling:
            raise ValueError(
                f"{value:g} is above the run's ceiling of {ceiling:g}; a task or suite may only "
                f"make the sandbox stronger: ask for at most {ceiling:g}"
            )
        return value

    def over(self, base: SandboxSpec | None) -> SandboxSpec:
        """These settings where given, ``base``'s elsewhere (``env``, ``ro_binds`` merged).

        For the harness's own additions (a pinned tool environment's mount); a task's or
        suite's settings are combined by :func:`effective_sandbox`, never by this.
        """
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


def _os_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be an environment entry, path or argument (None: it can)."""
    if "\x00" in text:
        return "it holds a NUL byte, which no environment entry or path can"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a lone surrogate (not UTF-8 text)"
    return None


def effective_sandbox(
    run_backend: str | None,
    suite: SandboxSpec | None,
    task: SandboxSpec | None,
    *,
    commands_on_host: bool = False,
) -> SandboxSpec:
    """An episode's sandbox: the stronger of the run's, the suite's and the task's, per field.

    The one place these are combined (invariant 9: a task or suite may ask for a
    stronger sandbox, never a weaker one):

    * ``backend``: the most specific isolated one named (task, then suite, then the
      run's ``--sandbox``: a task that needs a container image names its container).
      Else the run's own ``process`` (the CLI takes it only with
      ``--run-commands-on-host``); a task's or suite's ``process`` only with
      ``commands_on_host`` (that option); otherwise None, the host's isolated default
      (bwrap; where bwrap cannot run, commands fail with the reason, they never fall
      back to the host).
    * each limit: the smallest any layer gives, never above :data:`RUN_CEILINGS` and
      never off (a ``0`` made in code counts as the ceiling); unset, the default.
    * ``ro_binds`` and ``env``: both layers' (the task's value wins a key); each bind
      was checked when its file loaded (no host secrets, no answer keys), and is judged
      again here (``paths.host_bind_problem``, on the path every symlink leads to: a link
      changed since load is caught before the episode) and kept as that resolved path.
    * ``image``, ``toolenv``, ``output_chars``: the task's, else the suite's (they say
      what runs and what is shown, not how far it is held).

    Args:
        run_backend: The run's ``--sandbox`` (None: the host's isolated default). The
            CLI sets an unisolated one only when given ``--run-commands-on-host``.
        suite: The suite's settings, if any.
        task: The task's settings, if any.
        commands_on_host: The run was given ``--run-commands-on-host``.
    """
    layers = [layer for layer in (task, suite) if layer is not None]  # most specific first
    named = [b for b in (*(layer.backend for layer in layers), run_backend) if b is not None]
    isolated = [b for b in named if b not in UNISOLATED_BACKENDS]
    if isolated:
        backend: str | None = isolated[0]
    elif run_backend is not None:  # the run's own decision
        backend = run_backend
    else:
        backend = named[0] if named and commands_on_host else None
    merged: dict[str, Any] = {"backend": backend}
    for name, ceiling in RUN_CEILINGS.items():
        given = [getattr(layer, name) for layer in layers if getattr(layer, name) is not None]
        held = [ceiling if value == 0 else min(value, ceiling) for value in given]
        merged[name] = min(held) if held else None
    for name in ("image", "toolenv", "output_chars"):
        merged[name] = next((getattr(la, name) for la in layers if getattr(la, name)), None)
    for name in ("env", "ro_binds"):
        parts = [getattr(layer, name) for layer in reversed(layers) if getattr(layer, name)]
        merged[name] = {key: value for part in parts for key, value in part.items()} or None
    if merged["ro_binds"]:
        merged["ro_binds"] = _judged_binds(merged["ro_binds"])
    return SandboxSpec.model_validate(merged)


def _judged_binds(binds: dict[str, str]) -> dict[str, str]:
    """A task's and suite's binds judged now, host paths resolved (what is mounted).

    Raises:
        SpecError: a bind that is refused now (a symlink changed since the file loaded).
    """
    problems = [
        Problem(None, None, f"sandbox.ro_binds.{host}", problem)
        for host, inside in binds.items()
        if (problem := ro_bind_problem(host, inside)) is not None
    ]
    if problems:
        raise SpecError(problems)
    return {str(Path(host).resolve()): inside for host, inside in binds.items()}


def unisolated_problem(spec: SandboxSpec | None, *, commands_on_host: bool) -> str | None:
    """Why a task's or suite's ``sandbox.backend`` is refused, or None.

    ``process`` runs commands on the host as the harness's user: a task may not ask
    for it; the person running toolproof may allow it with ``--run-commands-on-host``.
    """
    if spec is None or spec.backend not in UNISOLATED_BACKENDS or commands_on_host:
        return None
    return (
        f"{spec.backend!r} runs commands on the host without isolation, and a task or suite "
        "may only ask for a stronger sandbox, never a weaker one; remove the line (commands "
        "then run in bwrap), name an isolated backend (bwrap, podman, docker), or, to run "
        f"it on purpose, pass {HOST_OPTION} to `toolproof run` or `toolproof check-task`"
    )
