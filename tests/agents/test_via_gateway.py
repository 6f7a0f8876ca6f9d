"""The gateway route of framework and cmd agents, from their options (hostile values too)."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.agents.adapters._via_gateway import agent_options, gateway_plan
from toolproof.gateway import PLACEHOLDER_KEY
from toolproof.spec import SpecError


def test_the_key_stays_with_the_harness_and_the_agent_gets_the_gateway() -> None:
    options = {"base_url": "http://up:1/v1", "api_key": "sk-real", "model": "m", "x": 1}
    plan = gateway_plan(options, "langchain:a:b")
    upstream = plan.route.upstreams["openai"]
    assert (upstream.base_url, upstream.api_key) == ("http://up:1/v1", "sk-real")
    urls = {
        "openai": "http://127.0.0.1:9/e/t/openai/v1",
        "anthropic": "http://127.0.0.1:9/e/t/anthropic",
    }
    given = agent_options(plan, urls, options)
    assert given == {
        "model": "m",
        "x": 1,
        "base_url": urls["openai"],
        "api_key": PLACEHOLDER_KEY,
        "provider": "openai",
    }
    assert "sk-real" not in repr(plan.route)


def test_anthropic_gets_its_own_url() -> None:
    plan = gateway_plan({"provider": "anthropic"}, "cmd:x")
    assert plan.route.upstreams["anthropic"].base_url == "https://api.anthropic.com"
    urls = {"openai": "o", "anthropic": "a"}
    assert agent_options(plan, urls, {})["base_url"] == "a"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"provider": "azure"}, "unknown provider 'azure'"),
        ({"base_url": "file:///etc/passwd"}, "must be an http"),
        ({"base_url": 12}, "must be an http"),
        ({"api_key": ["k"]}, "must be a string"),
        ({"model": {"name": "m"}}, "must be a model name"),
        ({"max_model_calls": 0}, "whole number >= 1"),
        ({"max_model_calls": True}, "whole number >= 1"),
    ],
)
def test_bad_options_are_spec_errors(options: dict[str, Any], said: str) -> None:
    with pytest.raises(SpecError, match=said):
        gateway_plan(options, "langchain:a:b")
