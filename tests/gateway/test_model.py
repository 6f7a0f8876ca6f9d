"""``--model PROVIDER:MODEL`` parsing, with values people get wrong."""

from __future__ import annotations

import pytest

from toolproof.gateway import ModelRef, ModelSpecError, parse_model


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("openai:gpt-4o-mini", ModelRef("openai", "gpt-4o-mini")),
        ("anthropic:claude-haiku-4-5", ModelRef("anthropic", "claude-haiku-4-5")),
        (
            "openai-compatible:qwen2.5@http://localhost:8000/v1",
            ModelRef("openai-compatible", "qwen2.5", "http://localhost:8000/v1"),
        ),
        ("openai:ft:gpt-4o:org::id", ModelRef("openai", "ft:gpt-4o:org::id")),
    ],
)
def test_good_models(text: str, ref: ModelRef) -> None:
    assert parse_model(text) == ref
    assert ref.options()["model"] == ref.name


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("gpt-4o", "give PROVIDER:MODEL"),
        ("azure:gpt-4o", "give PROVIDER:MODEL"),
        ("openai:", "empty"),
        ("openai:gpt 4o", "has spaces"),
        ("openai-compatible:qwen", "names its server"),
        ("openai-compatible:qwen@file:///etc/passwd", "names its server"),
    ],
)
def test_bad_models_say_what_to_write(text: str, said: str) -> None:
    with pytest.raises(ModelSpecError, match=said) as caught:
        parse_model(text)
    assert repr(text) in str(caught.value)
