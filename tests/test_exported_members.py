"""The public API is one list: ``toolproof.__all__``, pinned here; importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest

import toolproof

PUBLIC = [
    "Agent",
    "AgentTurn",
    "CheckResult",
    "DrivenAgent",
    "EpisodeRecord",
    "Message",
    "Observation",
    "RunConfig",
    "RunReader",
    "Runner",
    "ScoringContext",
    "SpecError",
    "Step",
    "Suite",
    "Task",
    "TaskInstance",
    "Termination",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolKind",
    "ToolResult",
    "ToolSession",
    "ToolproofError",
    "Trajectory",
    "Usage",
    "__version__",
    "agent",
    "check",
    "check_function",
    "load_suite",
    "tool",
]


def test_all_is_pinned_and_sorted() -> None:
    assert toolproof.__all__ == PUBLIC
    assert toolproof.__all__ == sorted(toolproof.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves_to_its_home(name: str) -> None:
    value = getattr(toolproof, name)
    assert value is not None
    if name != "__version__":
        module = getattr(value, "__module__", "")
        assert module.startswith("toolproof."), (name, module)
        assert not module.split(".")[-1].startswith("_") or module == "toolproof._version"
    assert name in dir(toolproof)


def test_public_names_are_the_real_objects() -> None:
    from toolproof.engine import Runner
    from toolproof.spec import load_suite
    from toolproof.tools import tool

    assert toolproof.Runner is Runner
    assert toolproof.load_suite is load_suite
    assert toolproof.tool is tool
    assert issubclass(toolproof.SpecError, toolproof.ToolproofError)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = toolproof.Nope  # type: ignore[attr-defined]
    from toolproof import __version__

    assert __version__ == toolproof.__version__


def test_import_toolproof_is_cheap() -> None:
    code = (
        "import sys, toolproof\n"
        "heavy = [m for m in ('pydantic', 'yaml', 'jsonschema', 'click', 'rich', 'httpx',"
        " 'toolproof.engine', 'toolproof.spec') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
        "toolproof.Task\n"
        "print('pydantic' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = result.stdout.splitlines()
    assert before == ""  # nothing heavy until a name is used
    assert after == "True"  # ...and then it loads
