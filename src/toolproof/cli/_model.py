"""``--model`` and the model gateway of a ``toolproof run``.

The agent-driven kinds (``langchain``, ``llamaindex``, ``autogen``, ``cmd``) reach
their models through :mod:`toolproof.gateway`. Here the run's model settings become
their agent options (``provider``, ``model``, the upstream ``base_url`` and
``api_key``, read from the provider's usual environment variables), and the gateway
runs for the length of the run.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from toolproof.engine import RunConfig

GATEWAY_KINDS = frozenset({"langchain", "llamaindex", "autogen", "cmd"})
"""Agent kinds whose model calls go through the model gateway."""

UPSTREAM_ENV = {
    "openai": {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"},
    "openai-compatible": {"api_key": "OPENAI_API_KEY"},
    "anthropic": {"base_url": "ANTHROPIC_BASE_URL", "api_key": "ANTHROPIC_API_KEY"},
}
"""Where the gateway's upstream endpoint and key come from, by provider."""


def gateway_options(agent: str, model: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The agent options of a gateway kind: ``--model`` folded in, the upstream from the env.

    ``--agent-arg`` wins over the environment; ``--model`` wins over ``--agent-arg``
    (it is the run's setting). A key recorded as ``<redacted>`` (a resumed run) is read again.

    Raises:
        click.BadParameter: ``--model`` is unreadable, or given for an agent that names
            its model itself (``openai:MODEL``) or has none.
    """
    kind = agent.partition(":")[0]
    if kind not in GATEWAY_KINDS:
        if model is not None:
            raise click.BadParameter(
                f"--model {model!r} is for agents that call their model themselves "
                f"({', '.join(sorted(GATEWAY_KINDS))}); --agent {agent!r} "
                + (
                    "names its model in the spec (e.g. openai:gpt-4o-mini)"
                    if kind in ("openai", "anthropic")
                    else "takes no model"
                ),
                param_hint="--model",
            )
        return options
    from toolproof.engine.config import REDACTED  # the gateway only for an agent that uses it
    from toolproof.gateway import ModelSpecError, parse_model

    filled = dict(options)
    if model is not None:
        try:
            ref = parse_model(model)
        except ModelSpecError as exc:
            raise click.BadParameter(str(exc), param_hint="--model") from None
        if filled.get("provider", ref.provider) != ref.provider:
            filled.pop("base_url", None)  # another provider's endpoint
        filled.update(ref.options())
    provider = str(filled.get("provider", "openai"))
    for key, var in UPSTREAM_ENV.get(provider, {}).items():
        value = os.environ.get(var)
        if value and filled.get(key) in (None, REDACTED):
            filled[key] = value
    prices = os.environ.get("TOOLPROOF_PRICES")
    if prices and "prices" not in filled:
        filled["prices"] = prices
    return filled


def side_options(role: str, model: str, cache: str | None) -> dict[str, Any]:
    """The gateway options of the user or judge model (``--user-model``, ``--judge-model``).

    Args:
        role: ``user`` or ``judge`` (names the option in messages).
        model: ``PROVIDER:MODEL`` as given.
        cache: The run's ``--cache`` folder, or None.

    Raises:
        click.BadParameter: the model is unreadable, or a judge that does not speak the
            OpenAI protocol (the judge check calls the OpenAI SDK).
    """
    from toolproof.gateway import ModelSpecError, parse_model

    hint = f"--{role}-model"
    try:
        ref = parse_model(model)
    except ModelSpecError as exc:
        raise click.BadParameter(str(exc).replace("--model", hint), param_hint=hint) from None
    if role == "judge" and ref.api != "openai":
        raise click.BadParameter(
            f"{model!r}: the judge calls the OpenAI protocol; give an openai: or "
            "openai-compatible: model (e.g. openai:gpt-4o-mini)",
            param_hint=hint,
        )
    filled: dict[str, Any] = dict(ref.options())
    for key, var in UPSTREAM_ENV.get(ref.provider, {}).items():
        value = os.environ.get(var)
        if value and key not in filled:
            filled[key] = value
    prices = os.environ.get("TOOLPROOF_PRICES")
    if prices:
        filled["prices"] = prices
    if cache is not None:
        filled["cache"] = cache
    return filled


@contextlib.contextmanager
def run_gateway(config: RunConfig) -> Iterator[None]:
    """The model gateway for the length of a run: ``--max-model-calls`` set, stopped after.

    A run that calls no model and sets no limit never imports the gateway package (a
    twentieth of a one-task run's start-up); one imported earlier in the process (an
    earlier run's limit) is set all the same.
    """
    limit = config.max_model_calls
    if limit is not None or "toolproof.gateway" in sys.modules:
        from toolproof import gateway

        gateway.limit_shared(limit)  # the server is imported on first use
    try:
        yield
    finally:
        loaded = sys.modules.get("toolproof.gateway")
        if loaded is not None:  # started on first use; a run that used none stops nothing
            loaded.stop_shared()
