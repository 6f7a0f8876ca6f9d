"""Options of the harness-driven adapters (``--agent-arg key=value``), checked once per run."""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolproof.spec import Problem, SpecError

from ..base import AgentSpec
from ._cost import prices_option

OptionsT = TypeVar("OptionsT", bound=BaseModel)


class CallOptions(BaseModel):
    """How every adapter calls its model or agent: timeouts, retries, cache."""

    model_config = ConfigDict(extra="forbid")

    timeout: float = Field(120.0, gt=0, description="Seconds one request may take.")
    max_retries: int = Field(
        4, ge=0, description="Retries of a 429, 5xx, timeout or lost connection."
    )
    backoff_base: float = Field(1.0, ge=0, description="Seconds before the first retry; doubles.")
    backoff_max: float = Field(60.0, ge=0, description="The longest wait between retries.")
    cache: str | None = Field(None, description="Model-call cache directory (--cache DIR).")
    api_key: str | None = Field(
        None, description="API key or bearer token (the CLI reads it from the environment)."
    )

    @field_validator("api_key")
    @classmethod
    def _not_redacted(cls, value: str | None) -> str | None:
        # toolproof.engine.config.REDACTED: how run metadata records a key.
        if value == "<redacted>":
            raise ValueError(
                "this run's API key is not recorded with it; set the provider's API key "
                "environment variable (e.g. OPENAI_API_KEY) or pass --agent-arg api_key=..."
            )
        return value


class ChatOptions(CallOptions):
    """Options of the chat-model adapters (openai, anthropic)."""

    base_url: str | None = Field(None, description="API endpoint (the provider's when unset).")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature.")
    seed: int | None = Field(None, description="Sampling seed (OpenAI only).")
    max_tokens: int | None = Field(None, gt=0, description="Most tokens per reply.")
    stream: bool = Field(False, description="Stream replies and assemble them.")
    prices: list[str] = Field(default_factory=list, description="Extra price files.")

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> list[str]:
        return prices_option(value)


def parse_options(model: type[OptionsT], spec: AgentSpec) -> OptionsT:
    """Validate an agent's options.

    Raises:
        SpecError: an unknown option (listing the valid ones) or a bad value.
    """
    try:
        return model.model_validate(spec.options)
    except ValidationError as exc:
        valid = ", ".join(sorted(model.model_fields))
        problems = []
        for error in exc.errors():
            name = ".".join(str(p) for p in error["loc"])
            if error["type"] == "extra_forbidden":
                message = f"{spec.kind} agents have no option {name!r}; valid options: {valid}"
            else:
                message = f"{error['msg']}, got {error.get('input')!r}"
            problems.append(Problem(None, None, f"--agent-arg {name}", message))
        raise SpecError(problems) from exc


def require_target(spec: AgentSpec, example: str) -> str:
    """The model name of a spec such as ``openai:gpt-4o``.

    Raises:
        SpecError: no model was given.
    """
    if not spec.target:
        raise SpecError(
            [Problem(None, None, "agent", f"{spec.kind} agents need a model, e.g. {example}")]
        )
    return spec.target


def require_sdk(module: str, extra: str) -> None:
    """Check an optional SDK is installed, without keeping it imported here.

    Raises:
        SpecError: naming the extra to install.
    """
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"the {extra} agent needs the {module!r} package ({exc}); "
                    f"install it with: pip install 'toolproof[{extra}]'",
                )
            ]
        ) from exc
