"""``--model PROVIDER:MODEL``: the model as a run setting, apart from the agent."""

from __future__ import annotations

from dataclasses import dataclass

PROVIDER_NAMES = ("anthropic", "openai", "openai-compatible", "litellm", "ollama", "vllm")
"""Providers ``--model`` names; ``openai-compatible`` needs ``NAME@BASE_URL``; ``litellm``
takes LiteLLM's model names (``gemini/gemini-2.0-flash``); ``ollama`` and ``vllm`` are
OpenAI-compatible servers on their usual local ports (``--agent-arg base_url`` moves them)."""


class ModelSpecError(ValueError):
    """A ``--model`` value that cannot be read; the message says what to write."""


@dataclass(frozen=True)
class ModelRef:
    """A parsed ``--model``.

    Attributes:
        provider: One of :data:`PROVIDER_NAMES`.
        name: The model name the provider knows it by.
        base_url: The server of an ``openai-compatible`` model (else None: the provider's).
    """

    provider: str
    name: str
    base_url: str | None = None

    @property
    def api(self) -> str:
        """The wire protocol: ``anthropic`` or ``openai``."""
        return "anthropic" if self.provider == "anthropic" else "openai"

    def options(self) -> dict[str, str]:
        """The agent options it stands for (``provider``, ``model``, maybe ``base_url``)."""
        given = {"provider": self.provider, "model": self.name}
        if self.base_url is not None:
            given["base_url"] = self.base_url
        return given


EXAMPLES = (
    "openai:gpt-4o-mini, anthropic:claude-haiku-4-5, "
    "openai-compatible:qwen2.5-7b-instruct@http://localhost:8000/v1, ollama:qwen2.5:7b, "
    "litellm:gemini/gemini-2.0-flash"
)


def parse_model(text: str) -> ModelRef:
    """Read ``PROVIDER:MODEL`` (``openai-compatible:NAME@URL`` for a server of your own).

    Raises:
        ModelSpecError: an unknown provider, no model name, or a bad URL.
    """
    provider, sep, rest = text.strip().partition(":")
    if not sep or provider not in PROVIDER_NAMES:
        raise ModelSpecError(
            f"--model {text!r}: give PROVIDER:MODEL with PROVIDER one of "
            f"{', '.join(PROVIDER_NAMES)}, e.g. {EXAMPLES}"
        )
    base_url = None
    if provider == "openai-compatible":
        name, at, base_url = rest.partition("@")
        if not at or not base_url.startswith(("http://", "https://")):
            raise ModelSpecError(
                f"--model {text!r}: an openai-compatible model names its server, "
                "e.g. openai-compatible:qwen2.5-7b-instruct@http://localhost:8000/v1"
            )
    else:
        name = rest
    name = name.strip()
    if not name or any(c.isspace() for c in name):
        raise ModelSpecError(f"--model {text!r}: the model name is empty or has spaces")
    return ModelRef(provider, name, base_url)
