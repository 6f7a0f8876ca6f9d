"""Tokens and cost of model calls.

Token counts come from the provider when it reports them; otherwise they are
estimated offline at four characters a token and flagged ``estimated=True``
(no tokenizer is downloaded). Cost comes from a price table in US dollars per
million input and output tokens: the shipped ``prices.yaml``, extended by the
user's files (``--agent-arg prices=FILE``). A model without a price gets
``cost_usd=None`` so that reports show it as unpriced, never as $0.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Usage, ingress

_SNAPSHOT = re.compile(r"^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class Price(BaseModel):
    """What one model costs, in US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, description="USD per million input (prompt) tokens.")
    output: float = Field(ge=0, description="USD per million output (completion) tokens.")
    cached_input: float | None = Field(
        None,
        ge=0,
        description=(
            "USD per million input tokens read from the provider's prompt cache "
            "(unset: priced as input)."
        ),
    )

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """The cost of a call in US dollars (``cached_input_tokens`` are part of the input)."""
        cached = min(max(cached_input_tokens, 0), input_tokens)
        rate = self.input if self.cached_input is None else self.cached_input
        fresh = input_tokens - cached
        return (fresh * self.input + cached * rate + output_tokens * self.output) / 1_000_000


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    models: dict[str, Price] = Field(default_factory=dict)


def _parse(text: str, source: str) -> dict[str, Price]:
    file = Path(source)
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SpecError([Problem(file, None, "", f"is not valid YAML: {exc}")]) from exc
    try:
        return _PriceFile.model_validate(data).models
    except ValidationError as exc:
        raise SpecError(
            [
                Problem(
                    file,
                    None,
                    ".".join(str(p) for p in e["loc"]),
                    f"{e['msg']}; expected models: {{NAME: {{input: USD, output: USD}}}} "
                    "(per million tokens)",
                )
                for e in exc.errors()
            ]
        ) from exc


@functools.cache
def _shipped() -> dict[str, Price]:
    text = resources.files(__package__ or "toolproof.agents.adapters").joinpath("prices.yaml")
    return _parse(text.read_text(encoding="utf-8"), "prices.yaml")


class PriceTable:
    """Prices by model name, looked up exactly or as a dated snapshot of a known name."""

    def __init__(self, prices: dict[str, Price]) -> None:
        self.prices = dict(prices)

    @classmethod
    def load(cls, files: Iterable[str | Path] = ()) -> PriceTable:
        """The shipped table, extended (and overridden) by the given files in order.

        Raises:
            SpecError: a file is missing, not YAML, or not a price table.
        """
        prices = dict(_shipped())
        for name in files:
            path = Path(name)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise SpecError(
                    [Problem(path, None, "prices", f"cannot read the price file: {exc.strerror}")]
                ) from exc
            prices.update(_parse(text, str(path)))
        return cls(prices)

    def price(self, model: str) -> Price | None:
        """The price of a model, or None when it is unpriced."""
        if model in self.prices:
            return self.prices[model]
        matches = [
            name
            for name in self.prices
            if model.startswith(name) and _SNAPSHOT.match(model[len(name) :])
        ]
        return self.prices[max(matches, key=len)] if matches else None

    def usage(
        self,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        *,
        input_chars: int = 0,
        output_chars: int = 0,
        cached_input_tokens: int = 0,
    ) -> Usage:
        """Usage of one call: the provider's counts, or estimates from character counts.

        Args:
            model: The model, for its price.
            input_tokens: Prompt tokens the provider reported, or None.
            output_tokens: Completion tokens the provider reported, or None.
            input_chars: Characters of the request, for the estimate.
            output_chars: Characters of the reply, for the estimate.
            cached_input_tokens: Input tokens the provider read from its prompt cache
                (part of ``input_tokens``), priced at ``cached_input`` when the table has it.

        A count that does not pass the ingress for agent bytes (not a whole number from 0
        to ``ingress.MAX_COUNT``: a provider may send anything) counts as not reported, so
        the usage is estimated and says so; the adapters refuse such a reply before it gets
        here (``_reply.checked_reply``), the model gateway's replies come here as they are.
        """
        input_tokens, output_tokens = _count(input_tokens), _count(output_tokens)
        estimated = input_tokens is None or output_tokens is None
        tokens_in = estimate_tokens(input_chars) if input_tokens is None else input_tokens
        tokens_out = estimate_tokens(output_chars) if output_tokens is None else output_tokens
        cached_input_tokens = _count(cached_input_tokens) or 0
        price = self.price(model)
        return Usage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            estimated=estimated,
            cost_usd=(
                None if price is None else price.cost(tokens_in, tokens_out, cached_input_tokens)
            ),
        )


def _count(value: object) -> int | None:
    try:
        return None if value is None else ingress.count(value, "tokens")
    except ingress.IngressError:
        return None


def estimate_tokens(chars: int) -> int:
    """An offline token estimate: four characters a token, rounded up."""
    return math.ceil(max(chars, 0) / 4)


def prices_option(value: Any) -> list[str]:
    """The ``prices`` agent option as a list of files (one path, or several joined by ``,``).

    Raises:
        SpecError: the option is not a path or a list of paths.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in (p.strip() for p in value.split(",")) if part]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SpecError(
        [Problem(None, None, "--agent-arg prices", f"must be a YAML file path, got {value!r}")]
    )
