"""Agent specs: ``kind[:target]`` parsed, looked up in the registry, or refused clearly."""

from __future__ import annotations

import pytest

from toolproof.agents import AgentSpec, agent, agent_kinds, build_agent, parse_agent_spec
from toolproof.spec import SpecError


@pytest.mark.parametrize(
    ("text", "kind", "target"),
    [
        ("oracle", "oracle", None),
        ("openai:gpt-4o", "openai", "gpt-4o"),
        ("python:my_pkg.agents:make", "python", "my_pkg.agents:make"),
        (" random : ", "random", None),
    ],
)
def test_parse_splits_kind_and_target(text: str, kind: str, target: str | None) -> None:
    spec = parse_agent_spec(text, {"seed": 3})
    assert (spec.kind, spec.target, spec.options) == (kind, target, {"seed": 3})


def test_label_is_the_spec_as_written() -> None:
    assert AgentSpec("oracle").label == "oracle"
    assert AgentSpec("python", "m:a").label == "python:m:a"


def test_builtin_kinds_are_registered() -> None:
    assert {"oracle", "noop", "random", "python"} <= set(agent_kinds())


def test_unknown_kind_lists_the_valid_kinds() -> None:
    with pytest.raises(SpecError) as info:
        build_agent(parse_agent_spec("gpt5:turbo"))
    (problem,) = info.value.problems
    assert problem.field == "agent"
    assert "unknown agent 'gpt5:turbo'" in problem.message
    for kind in ("oracle", "noop", "random", "python"):
        assert kind in problem.message


@pytest.mark.usefixtures("restore_registries")
def test_register_a_kind_and_refuse_duplicates() -> None:
    @agent("tp-test-kind")
    def build(spec: AgentSpec) -> object:
        return lambda ctx: None

    assert "tp-test-kind" in agent_kinds()
    assert build_agent(AgentSpec("tp-test-kind")) is not None
    with pytest.raises(ValueError, match="'tp-test-kind' is already registered"):
        agent("tp-test-kind")(build)  # type: ignore[arg-type]
