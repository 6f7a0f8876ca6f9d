"""The ``live:`` block of a task or suite: which real services a live task may reach.

A live task calls real HTTP services through toolproof's egress proxy. This model
says what the proxy lets through for the task (hosts, methods, limits), which
secrets it injects (named by environment variable; the values are read by the
command line and never reach the agent) and, at suite level, where the shipped
cassettes are. A task's block replaces the suite's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from .suite import Suite

_HOST = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]$")
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


class LiveSecret(BaseModel):
    """A credential the proxy adds to requests to one host (the agent never sees it)."""

    model_config = ConfigDict(extra="forbid")

    env: str = Field(
        pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="Environment variable of the harness that holds the value, e.g. WEATHER_KEY.",
    )
    host: str = Field(description="Host the secret is sent to (one of the allowed hosts).")
    header: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9-]+$",
        description="Request header that carries it, e.g. X-Api-Key.",
    )
    query: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.-]+$", description="Query parameter that carries it instead."
    )
    prefix: str = Field("", description="Text put before the value, e.g. 'Bearer '.")

    @model_validator(mode="after")
    def _one_place(self) -> LiveSecret:
        if (self.header is None) == (self.query is None):
            raise ValueError(
                f"secret {self.env}: give exactly one of header or query (where the proxy puts it)"
            )
        return self


class LiveSpec(BaseModel):
    """What the egress proxy allows a live task: hosts, methods, limits and secrets."""

    model_config = ConfigDict(extra="forbid")

    hosts: list[str] = Field(
        min_length=1,
        description=(
            "Host names the task may reach, e.g. api.open-meteo.com (no IP literals, no "
            "localhost; an optional :port when it is not the scheme's default)."
        ),
    )
    methods: list[str] = Field(
        default_factory=lambda: ["GET", "HEAD"], description="HTTP methods allowed."
    )
    max_requests: int = Field(30, ge=1, le=10_000, description="Requests per episode at most.")
    requests_per_minute: int = Field(
        60, ge=1, le=10_000, description="Requests per episode in any 60 seconds at most."
    )
    max_request_bytes: int = Field(
        65_536, ge=0, le=16_777_216, description="Largest request body the proxy forwards."
    )
    max_response_bytes: int = Field(
        1_048_576, ge=1, le=67_108_864, description="Largest response body the proxy returns."
    )
    secrets: list[LiveSecret] = Field(
        default_factory=list, description="Credentials the proxy injects (never shown to agents)."
    )
    cassettes: str | None = Field(
        None,
        description=(
            "Suite level: directory of shipped cassettes, relative to suite.yaml; runs replay "
            "from it unless told --live record."
        ),
    )

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, hosts: list[str]) -> list[str]:
        out = []
        for entry in hosts:
            host, _, port = entry.strip().lower().rstrip(".").partition(":")
            if not _HOST.match(host) or host == "localhost" or host.endswith(".localhost"):
                raise ValueError(
                    f"host {entry!r} is not a public host name (IP literals and localhost are "
                    "never allowed); fix: write a name such as api.example.org"
                )
            if port and not (port.isdigit() and 0 < int(port) < 65536):
                raise ValueError(f"host {entry!r}: the port must be a number from 1 to 65535")
            out.append(f"{host}:{int(port)}" if port else host)
        return out

    @field_validator("methods")
    @classmethod
    def _methods(cls, methods: list[str]) -> list[str]:
        upper = [m.upper() for m in methods]
        for method in upper:
            if method not in _METHODS:
                raise ValueError(f"method {method!r} is not one of {', '.join(_METHODS)}")
        return upper

    @model_validator(mode="after")
    def _secret_hosts(self) -> LiveSpec:
        names = {h.partition(":")[0] for h in self.hosts}
        for secret in self.secrets:
            if secret.host.lower() not in names:
                raise ValueError(
                    f"secret {secret.env} goes to host {secret.host!r}, which is not in hosts; "
                    "fix: add it to hosts or send the secret to an allowed host"
                )
        return self


def effective_live(suite: LiveSpec | None, task: LiveSpec | None) -> LiveSpec | None:
    """The live settings of one task: its own block, else the suite's (None: not live)."""
    return task if task is not None else suite


def live_tasks(suite: Suite, task_ids: list[str] | None = None) -> dict[str, LiveSpec]:
    """The live settings of each live task of a suite (those selected, when given).

    Here rather than in :mod:`toolproof.live`, so that a run can ask whether it has live tasks
    without importing the proxy.
    """
    selected = None if task_ids is None else set(task_ids)
    found = {}
    for task in suite.tasks:
        spec = effective_live(suite.config.live, task.live)
        if spec is not None and (selected is None or task.id in selected):
            found[task.id] = spec
    return found
