"""Agent specs: ``kind[:target]`` parsed, looked up in the registry, or refused clearly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_each_builtin_kind_names_the_module_that_registers_it() -> None:
    # build_agent imports only KINDS[kind]; a kind missing from the table, or naming the
    # wrong module, would load every adapter again or not find its builder.
    from toolproof.agents import base
    from toolproof.agents.builtin import ADAPTERS, BUILTIN, KINDS

    agent_kinds()  # every built-in module imported
    packages = ("toolproof.agents.builtin.", "toolproof.agents.adapters.")
    builtin = {
        kind: builder.__module__.rpartition(".")[2]
        for kind, builder in base._REGISTRY.items()
        if builder.__module__.startswith(packages)
    }
    assert builtin == KINDS
    assert set(KINDS.values()) == set(BUILTIN) | set(ADAPTERS)


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_building_a_builtin_kind_imports_its_module_alone() -> None:
    done = _fresh(
        "import sys\n"
        "from toolproof.agents import AgentSpec, build_agent\n"
        "from toolproof.agents.builtin import KINDS\n"
        "build_agent(AgentSpec('oracle'))\n"
        "names = set(KINDS.values())\n"
        "print([m for m in sorted(sys.modules)"
        " if m.startswith('toolproof.agents.') and m.rpartition('.')[2] in names])\n"
        "print('httpx' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["['toolproof.agents.builtin.oracle']", "False"]


def test_a_plugin_that_took_a_builtin_name_still_fails_when_that_kind_is_built() -> None:
    done = _fresh(
        "from toolproof.agents import AgentSpec, agent, build_agent\n"
        "agent('oracle')(lambda spec: None)\n"
        "build_agent(AgentSpec('oracle'))\n"
    )
    assert done.returncode != 0
    assert "agent kind 'oracle' is already registered" in done.stderr


def test_a_plugin_kind_is_found_after_every_builtin_is_loaded() -> None:
    done = _fresh(
        "from toolproof.agents import AgentSpec, agent, agent_kinds, build_agent\n"
        "agent('tp-plugin')(lambda spec: 'built')\n"
        "print(build_agent(AgentSpec('tp-plugin')))\n"
        "print('http' in agent_kinds())\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["built", "True"]
