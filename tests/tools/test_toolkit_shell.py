"""run_command and read_output through the gateway, on a real workspace and sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.sandbox import get_backend
from toolproof.spec import SandboxSpec, WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.policy import requested_stop
from toolproof.tools.toolkits.shell import SETTINGS_KEY, episode_shell, offers_commands
from toolproof.trajectory import Termination, ToolCall, ToolResult
from toolproof.worlds import World

BACKENDS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            not get_backend(name).available(), reason=f"{name} cannot run here"
        ),
    )
    for name in ("bwrap", "process")
]


def live_processes(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line holds ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


class Shell:
    """A world with a workspace and a gateway offering the shell tools."""

    def __init__(self, backend: str, tmp_path: Path, **settings: Any) -> None:
        load_builtin()
        spec = WorldSpec(files={"hello.txt": "hello\n"})
        self.world = World(spec, tmp_root=tmp_path)
        sandbox = SandboxSpec(backend=backend, **settings)
        self.ctx = ToolContext(world=self.world, scratch={SETTINGS_KEY: sandbox})
        tools = [registry()["run_command"], registry()["read_output"]]
        self.gateway = ToolGateway(tools, self.ctx, timeout_s=120)
        self.calls = 0

    def call(self, name: str, **arguments: Any) -> ToolResult:
        self.calls += 1
        call = ToolCall(id=f"c{self.calls}", name=name, arguments=arguments)
        return asyncio.run(self.gateway.call(call))

    def run(self, command: str, **arguments: Any) -> dict[str, Any]:
        result = self.call("run_command", command=command, **arguments)
        assert not result.is_error, result.content
        value: dict[str, Any] = json.loads(result.content)
        return value


@pytest.fixture(params=BACKENDS)
def shell(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Shell]:
    box = Shell(request.param, tmp_path, wall_s=20, output_chars=200)
    yield box
    box.world.close()


def test_commands_run_in_the_workspace_and_keep_files(shell: Shell) -> None:
    out = shell.run("cat hello.txt && echo oops >&2 && mkdir -p d && echo 42 > d/n.txt; exit 3")
    assert out["exit_code"] == 3
    assert (out["stdout"], out["stderr"]) == ("hello\n", "oops\n")
    assert out["truncated"] is False and out["output_id"] == "o1"
    assert "duration_s" not in out  # the clock stays out of what the agent sees
    assert shell.world.workspace is not None
    assert (shell.world.workspace.root / "d" / "n.txt").read_text() == "42\n"
    assert shell.run("cat d/n.txt")["stdout"] == "42\n"
    assert shell.run('test -n "$WORKSPACE" && pwd')["exit_code"] == 0


def test_the_output_shows_the_workspace_not_its_host_path(shell: Shell) -> None:
    """Same bytes in every episode: no random temporary directory in pwd or a traceback."""
    assert shell.world.workspace is not None
    host = str(shell.world.workspace.root.resolve())
    out = shell.run('pwd; echo "$WORKSPACE"; ls "$(pwd)/nope"')
    assert out["stdout"].splitlines()[0] == "/workspace"
    assert host not in out["stdout"] + out["stderr"]
    assert "/workspace/nope" in out["stderr"]


def test_long_output_is_cut_and_readable_in_pages(shell: Shell) -> None:
    out = shell.run("seq 1 3000; seq 1 500 >&2")
    full = "".join(f"{n}\n" for n in range(1, 3001))
    assert out["truncated"] is True
    assert out["stdout"].startswith("1\n2\n3\n") and out["stdout"].endswith("2999\n3000\n")
    assert 'read_output(output_id="o1", stream="stdout", offset=' in out["stdout"]
    assert len(out["stdout"]) + len(out["stderr"]) < 200 + 2 * 160  # the budget, plus notes
    text, offset = "", 0
    while offset is not None:
        page = json.loads(shell.call("read_output", output_id="o1", offset=offset).content)
        assert page["total_chars"] == len(full)
        text += page["text"]
        offset = page["next_offset"]
    assert text == full
    err = json.loads(shell.call("read_output", output_id="o1", stream="stderr", limit=4).content)
    assert err["text"] == "1\n2\n" and err["next_offset"] == 4


def test_read_output_errors_are_the_agents(shell: Shell) -> None:
    early = shell.call("read_output", output_id="o1")
    assert early.error_kind == "tool_error" and "no command has run" in early.content
    shell.run("true")
    for arguments in (
        {"output_id": "o9"},
        {"output_id": "../etc"},
        {"output_id": "o1", "stream": "both"},
        {"output_id": "o1", "offset": -1},
    ):
        result = shell.call("read_output", **arguments)
        assert result.is_error and result.error_kind == "tool_error", arguments
    bad = shell.call("run_command", command="  ")
    assert bad.error_kind == "tool_error" and "non-empty" in bad.content
    assert shell.call("run_command", command="true", timeout_s=0).error_kind == "tool_error"


def test_a_runaway_command_is_a_resource_limit_error_and_the_shell_goes_on(shell: Shell) -> None:
    result = shell.call("run_command", command="while :; do :; done", timeout_s=1)
    assert result.is_error and result.error_kind == "resource_limit"
    assert "wall-time limit of 1 s" in result.content and "output id: o1" in result.content
    assert requested_stop(shell.ctx) is None  # one command's limit: the episode goes on
    assert shell.run("echo still here")["stdout"] == "still here\n"


def test_a_disk_filler_hits_the_file_size_limit(tmp_path: Path) -> None:
    shell = Shell("bwrap" if get_backend("bwrap").available() else "process", tmp_path,
                  file_size_mb=1)  # fmt: skip
    try:
        result = shell.call("run_command", command="head -c 3000000 /dev/zero > fill.bin")
        assert result.error_kind == "resource_limit"
        assert "file-size limit of 1 MiB" in result.content
        assert requested_stop(shell.ctx) is None
        assert shell.run("echo ok")["exit_code"] == 0
    finally:
        shell.world.close()


def test_passing_the_workspace_size_ends_the_episode(tmp_path: Path) -> None:
    shell = Shell("process", tmp_path, workspace_mb=1, file_size_mb=10)
    try:
        result = shell.call("run_command", command="head -c 2000000 /dev/zero > fill.bin")
        assert result.error_kind == "resource_limit"
        assert "workspace size limit of 1 MiB" in result.content
        stop = requested_stop(shell.ctx)
        assert stop is not None and stop[0] is Termination.RESOURCE_LIMIT
        again = shell.call("run_command", command="echo more")
        assert again.error_kind == "resource_limit" and "no more commands" in again.content
    finally:
        shell.world.close()


def test_the_episode_command_time_budget(tmp_path: Path) -> None:
    shell = Shell("process", tmp_path, command_time_s=2)
    try:
        result = shell.call("run_command", command="sleep 30", timeout_s=25)
        assert result.error_kind == "resource_limit"
        assert "command-time budget of 2 s" in result.content
        stop = requested_stop(shell.ctx)
        assert stop is not None and stop[0] is Termination.RESOURCE_LIMIT
    finally:
        shell.world.close()


def test_closing_the_world_kills_a_running_command(shell: Shell) -> None:
    token = f"{time.time_ns() % 10**6 + 10**6}.5"  # a sleep length no other test uses
    results: list[ToolResult] = []
    thread = threading.Thread(
        target=lambda: results.append(shell.call("run_command", command=f"sleep {token}"))
    )
    thread.start()
    deadline = time.monotonic() + 30
    while not live_processes(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_processes(f"sleep {token}"), "the command never started"
    shell.world.close()
    thread.join(30)
    assert not thread.is_alive()
    assert live_processes(f"sleep {token}") == []
    assert shell.world.extras == {}


def test_the_shell_lives_in_the_world_and_says_whether_it_isolates(shell: Shell) -> None:
    shell.run("true")
    box = episode_shell(shell.ctx)
    assert shell.world.extras["shell"] is box
    assert box.isolated is (box.backend != "process")
    assert offers_commands([registry()["run_command"]])
    assert not offers_commands([registry()["read_file"]])


def test_commands_need_a_workspace() -> None:
    load_builtin()
    with World(WorldSpec(records={"a": 1})) as world:
        gateway = ToolGateway([registry()["run_command"]], ToolContext(world=world))
        call = ToolCall(id="c1", name="run_command", arguments={"command": "true"})
        result = asyncio.run(gateway.call(call))
    assert result.error_kind == "tool_error" and "no workspace" in result.content


def test_a_command_too_long_for_the_kernel_is_the_agents_error_not_a_crash(
    shell: Shell,
) -> None:
    """One argument of 128 KiB or more is refused by the kernel (E2BIG) when the sandbox
    starts; the tool says so first, and a command at the limit still runs."""
    from toolproof.tools.toolkits.shell import MAX_COMMAND_BYTES

    for size in (MAX_COMMAND_BYTES + 1, 200_000, 140_000):
        result = shell.call("run_command", command="true " + "é" * (size // 2))
        assert result.is_error and result.error_kind == "tool_error", result.content
        assert "split it" in result.content
    fits = ": " + "x" * (MAX_COMMAND_BYTES - 3)  # ':' ignores its arguments
    assert shell.run(fits)["exit_code"] == 0
