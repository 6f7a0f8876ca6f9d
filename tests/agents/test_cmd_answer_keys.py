"""A ``cmd:`` agent's binds never show answer keys (docs/isolation.md).

A directory bound into the agent's sandbox (``--agent-arg bind``, or its ``cwd``) that
holds a suite, a clone of toolproof (its ``.git`` has every task file, hidden test and
reference solution in its history) or lies inside toolproof's package is refused before
any episode, with the option and the fix; the sandboxed command refuses it again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

import toolproof
from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters._cmd_sandbox import SandboxedCommand, answer_key_binds
from toolproof.sandbox import ResourceLimits, SandboxError
from toolproof.spec import SpecError


def _clone(root: Path) -> Path:
    """A git repository laid out like a clone of toolproof."""
    suite = root / "src" / "toolproof" / "suites" / "core"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("name: core\n")
    (suite / "tasks").mkdir()
    (suite / "tasks" / "stock.yaml").write_text("solution: {answer: '7'}\n")
    (root / "agent").mkdir()
    (root / "agent" / "main.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _refused(options: dict[str, str]) -> tuple[str, str]:
    with pytest.raises(SpecError) as refused:
        build_agent(parse_agent_spec("cmd:true", options))
    (problem,) = refused.value.problems
    return problem.field or "", problem.message


@pytest.mark.parametrize(
    "which", ["the-clone", "its-parent", "its-suites", "a-bare-suite", "the-package"]
)
def test_a_bind_that_shows_answer_keys_is_refused(tmp_path: Path, which: str) -> None:
    clone = _clone(tmp_path / "work" / "toolproof")
    bare = tmp_path / "suites" / "mine"
    bare.mkdir(parents=True)
    (bare / "suite.yaml").write_text("name: mine\n")
    host = {
        "the-clone": clone,
        "its-parent": tmp_path / "work",
        "its-suites": clone / "src" / "toolproof" / "suites",
        "a-bare-suite": tmp_path / "suites",
        "the-package": Path(toolproof.__file__).parent / "suites",
    }[which]
    field, message = _refused({"bind": f"{host}:/opt/agent"})
    assert field == "--agent-arg bind"
    assert "answer keys" in message and "bind a directory" in message


def test_the_cwd_is_checked_too(tmp_path: Path) -> None:
    clone = _clone(tmp_path / "toolproof")
    field, message = _refused({"cwd": str(clone)})
    assert field == "--agent-arg cwd" and "git repository" in message


def test_the_running_checkout_is_refused_when_it_is_a_clone() -> None:
    checkout = Path(toolproof.__file__).resolve().parents[2]
    if not (checkout / ".git").exists():
        pytest.skip("toolproof is installed, not run from a clone")
    field, message = _refused({"bind": str(checkout)})
    assert field == "--agent-arg bind" and "answer keys" in message


def test_an_agent_directory_without_answer_keys_may_be_bound(tmp_path: Path) -> None:
    """Also one inside a clone, outside its suites and source (it shows neither)."""
    clone = _clone(tmp_path / "toolproof")
    plain = tmp_path / "my-agent"
    plain.mkdir()
    (plain / "main.py").write_text("print('hi')\n")
    for host in (plain, clone / "agent"):
        assert answer_key_binds([f"{host}:/opt/agent"], None) == []
        assert callable(build_agent(parse_agent_spec("cmd:true", {"bind": str(host)})))


def test_the_sandboxed_command_refuses_it_again(tmp_path: Path) -> None:
    """Past the run's check (a direct caller): no sandbox is made, nothing runs."""
    clone = _clone(tmp_path / "toolproof")
    with pytest.raises(SandboxError, match="answer keys"):
        SandboxedCommand("true", {str(clone): "/opt/agent"}, ResourceLimits(), "bwrap")


def test_toolproof_run_refuses_it_before_any_episode(
    invoke: Callable[..., Any], tmp_path: Path
) -> None:
    clone = _clone(tmp_path / "toolproof")
    refused = invoke(
        "run", "core", "--task", "hello-file", "--agent", "cmd:cat /opt/a/src/toolproof/x",
        "--agent-arg", f"bind={clone}:/opt/a", "--out", tmp_path / "run",
    )  # fmt: skip
    assert refused.code == 2, refused.err
    assert "--agent-arg bind" in refused.err and "answer keys" in refused.err
    assert not (tmp_path / "run").exists()  # nothing ran


def _agent_with_histories(root: Path) -> Path:
    """An agent's folder holding its own repository and a bare clone (no work tree)."""
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(root / "clone.git")], check=True)
    return root


def test_git_histories_in_a_bind_are_covered_inside_the_sandbox(tmp_path: Path) -> None:
    """A bare clone has no work tree to judge it by: whatever history a bind holds, the
    sandbox shows an empty directory in its place (the rest of the bind stays)."""
    from toolproof.sandbox import get_backend
    from toolproof.spec._answer_keys import histories

    cls = get_backend("bwrap")
    if cls.unavailable_reason() is not None:
        pytest.skip(f"bwrap unusable here: {cls.unavailable_reason()}")
    agent = _agent_with_histories(tmp_path / "agent")
    found = histories(agent)
    assert set(found) == {agent / ".git", agent / "clone.git"}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    look = (
        "ls -A /opt/agent/.git | wc -l; ls -A /opt/agent/clone.git | wc -l; cat /opt/agent/main.py"
    )
    with cls(workspace, ro_binds={str(agent): "/opt/agent"}) as shown:
        counts = shown.exec(look).stdout.split()
        assert int(counts[0]) > 0 and int(counts[1]) > 0  # without hide they are there
    with cls(workspace, ro_binds={str(agent): "/opt/agent"}, hide=found) as box:
        result = box.exec(look)
    assert result.stdout == "0\n0\nprint('hi')\n", result


def test_the_sandboxed_command_hides_its_binds_histories(tmp_path: Path) -> None:
    from toolproof.sandbox import get_backend

    if get_backend("bwrap").unavailable_reason() is not None:
        pytest.skip("bwrap unusable here")
    agent = _agent_with_histories(tmp_path / "agent")
    command = SandboxedCommand("true", {str(agent): "/opt/agent"}, ResourceLimits(), "bwrap")
    try:
        assert set(command.box.hide) >= {agent / ".git", agent / "clone.git"}
    finally:
        command.close()
