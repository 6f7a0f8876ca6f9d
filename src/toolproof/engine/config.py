"""The configuration of a run: everything that decides its results, and nothing else."""

from __future__ import annotations

import fnmatch
import hashlib
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializationInfo, field_serializer, model_validator

from toolproof.spec import Suite
from toolproof.spec.sandbox import UNISOLATED_BACKENDS

REDACTED = "<redacted>"
"""What a secret agent option (an API key) is written as in run metadata."""

SECRET_OPTIONS = frozenset({"api_key", "auth_token", "token", "password", "secret"})


def is_secret_option(name: str) -> bool:
    """Whether an agent option holds a secret that must never be written to disk."""
    return name in SECRET_OPTIONS or name.endswith(("_api_key", "_secret", "_password"))


BUDGETS = frozenset({"limit", "sample", "max_tokens", "max_cost_usd"})
"""Run options that bound how much of the run is done, not what it is: left out of the
run's identity, so ``--resume`` may raise them."""


def _draw_key(seed: int, task_id: str) -> str:
    """A task's place in the seeded order ``--sample`` cuts: a hash of seed and id, so the
    order does not depend on the Python process (no ``random`` state, no ``hash()``)."""
    return hashlib.sha256(f"{seed}\0{task_id}".encode()).hexdigest()


class Placement(BaseModel):
    """Where a run's episodes run when the run chose it itself (``engine/_placement.py``).

    Recorded in the run's config so that a resume runs the same way; not part of the
    run's identity (like ``--parallel``): the records and the summary are the same
    whatever the placement.
    """

    workers: int = Field(1, ge=1, description="Worker processes of the local executor.")
    loop: Literal["harness"] | None = Field(
        None,
        description=(
            "'harness': a python: agent runs on the harness's event loop, as "
            "`--agent-arg loop=harness` (back on its own thread for the rest of the run if "
            "it blocks or is not async); None: where its options put it. The run never "
            "chooses 'harness' itself (untrusted agent code), and `toolproof run` drops one "
            "an older run recorded."
        ),
    )


class RunConfig(BaseModel):
    """What a run is: resume refuses to continue a run under a different one."""

    suite: str = Field(description="Suite directory (resolved).")
    agent: str = Field(description="Agent spec, e.g. 'oracle' or 'openai:gpt-4o'.")
    agent_options: dict[str, Any] = Field(default_factory=dict)
    model: str | None = Field(
        None,
        description=(
            "The model of a framework or cmd agent (--model PROVIDER:MODEL), recorded apart "
            "from the agent so that runs of one agent on two models can be compared."
        ),
    )
    user_model: str | None = Field(
        None,
        description=(
            "The model that plays the user of `simulator: model` tasks (--user-model "
            "PROVIDER:MODEL); None: the scripted user stands in."
        ),
    )
    judge_model: str | None = Field(
        None,
        description="The model of every judge check (--judge-model), overriding the task's.",
    )
    side_models: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description=(
            "The gateway options of the user and judge models by role ('user', 'judge'): "
            "provider, model, base_url, api_key, cache, prices (keys redacted on disk)."
        ),
    )
    epochs: int = Field(1, ge=1)
    seed: int | None = Field(None, description="Overrides the suite's seed.")
    tasks: list[str] = Field(default_factory=list, description="Glob patterns of task ids.")
    system_prompt: str | None = Field(None, description="Custom system prompt (a custom track).")
    retries: int = Field(2, ge=0, description="Retries of an episode that ends in infra_error.")
    snapshots: bool = Field(True, description="Store a snapshot of each changed state.")
    max_model_calls: int | None = Field(
        None, ge=1, description="At most this many agent turns (model calls) at once."
    )
    max_sandboxes: int | None = Field(
        None, ge=1, description="At most this many sandboxed commands at once."
    )
    sandbox: str | None = Field(
        None,
        description=(
            "Sandbox backend of run_command for tasks and suites that name none "
            "(None: bwrap; process, which is NOT isolated, only with run_commands_on_host)."
        ),
    )
    run_commands_on_host: bool = Field(
        False,
        description=(
            "--run-commands-on-host: commands may run on the host without isolation (a "
            "task's or suite's backend: process, or the process backend where bwrap cannot "
            "run). Isolation is the run's decision: without it, nothing runs unisolated."
        ),
    )

    live: dict[str, Any] | None = Field(
        None,
        description=(
            "The live track: {mode, cassettes, digest, recorded_to} of the egress proxy "
            "(None: no live task in the run)."
        ),
    )
    allow_drift: bool = Field(
        False,
        description="Run tasks whose pinned tool environment differs from its version file.",
    )
    env_cache: str | None = Field(
        None, description="Cache of pinned tool environments (None: ~/.cache/toolproof/envs)."
    )
    attack: str | None = Field(
        None,
        description=(
            "The attack whose injections a package-built suite places (AgentDojo's "
            "important_instructions, ...; the suite name carries it as '@NAME'); None: none."
        ),
    )

    placement: Placement | None = Field(
        None,
        description=(
            "What a run at defaults chose for itself (worker processes, the agent's loop) "
            "when many episodes are in flight; None: nothing chosen."
        ),
    )

    limit: int | None = Field(
        None,
        ge=1,
        description=(
            "--limit N: only the first N selected tasks (suite order). A budget, not part "
            "of the run's identity: a resume may raise it."
        ),
    )
    sample: int | None = Field(
        None,
        ge=1,
        description=(
            "--sample N: N selected tasks drawn with the run's seed; a larger N on resume "
            "keeps the tasks drawn before (one seeded order, cut at N)."
        ),
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description=(
            "--max-tokens: start no episode once the run's agent tokens (input + output) "
            "reached this; the run stops cleanly, marked incomplete with the reason."
        ),
    )
    max_cost_usd: float | None = Field(
        None,
        gt=0,
        description=(
            "--max-cost USD: start no episode once the run's priced agent cost reached "
            "this; the run stops cleanly, marked incomplete with the reason."
        ),
    )

    @model_validator(mode="after")
    def _isolation_is_said_out_loud(self) -> RunConfig:
        """An unisolated backend needs ``run_commands_on_host`` (invariant 9), from Python too."""
        if self.sandbox in UNISOLATED_BACKENDS and not self.run_commands_on_host:
            raise ValueError(
                f"sandbox={self.sandbox!r} runs commands on the host without isolation; "
                "say so with run_commands_on_host=True (--run-commands-on-host), or leave "
                "sandbox unset for bwrap"
            )
        return self

    @field_serializer("agent_options")
    def _redact_secrets(self, options: dict[str, Any], info: SerializationInfo) -> dict[str, Any]:
        """Secrets (API keys) are dumped as ``<redacted>``: run metadata never holds them.

        ``model_dump_json(context={"with_secrets": True})`` keeps them, to ship a
        config to a remote worker.
        """
        if isinstance(info.context, dict) and info.context.get("with_secrets"):
            return options
        return {
            k: REDACTED if is_secret_option(k) and v is not None else v for k, v in options.items()
        }

    @field_serializer("side_models")
    def _redact_side_secrets(
        self, roles: dict[str, dict[str, Any]], info: SerializationInfo
    ) -> dict[str, dict[str, Any]]:
        """The user and judge models' keys are redacted like the agent's."""
        return {role: self._redact_secrets(opts, info) for role, opts in roles.items()}

    def track(self) -> str:
        """'standard', or 'custom-' plus a hash of the custom system prompt; 'live' before
        either for a run with live tasks (real services: never mixed with the rest)."""
        live = "live" if self.live is not None else ""
        if self.system_prompt is None:
            return live or "standard"
        custom = "custom-" + hashlib.sha256(self.system_prompt.encode()).hexdigest()[:10]
        return f"{live}-{custom}" if live else custom

    def identity(self) -> dict[str, Any]:
        """The fields that must match for a run to be resumed."""
        return self.model_dump(
            exclude={
                "retries",
                "max_model_calls",
                "max_sandboxes",
                "env_cache",
                "side_models",
                "placement",
            }
            | BUDGETS
        )

    def select(self, suite: Suite) -> list[str]:
        """Ids of the suite's tasks this run covers, in suite order: those matching
        ``tasks``, then cut by ``sample`` (a seeded draw) and ``limit`` (the first N)."""
        if not self.tasks:
            ids = [t.id for t in suite.tasks]
        else:
            ids = [t.id for t in suite.tasks if any(fnmatch.fnmatch(t.id, p) for p in self.tasks)]
        if self.sample is not None and self.sample < len(ids):
            order = sorted(ids, key=lambda i: _draw_key(self.effective_seed(suite), i))
            chosen = set(order[: self.sample])
            ids = [i for i in ids if i in chosen]
        if self.limit is not None:
            ids = ids[: self.limit]
        return ids

    def effective_seed(self, suite: Suite) -> int:
        """The seed used for drawing parameters."""
        return suite.config.seed if self.seed is None else self.seed
