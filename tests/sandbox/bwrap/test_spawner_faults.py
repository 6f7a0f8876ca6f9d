"""Failures around the spawner that are the host's, not the command's (red team, spawner).

A start the host refuses (here: the sandbox uid over the spawner's ``RLIMIT_NPROC``, as
other episodes' sandboxes fill a host's finite limit) is a fault toolproof witnessed,
whichever spawner started it; kernel memory a command left charged to the sandbox's
cgroup (an inode bomb) does not make the next commands run out of memory. These need
a root harness with a writable cgroup (as CI runs); elsewhere they skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.sandbox import (
    SANDBOX_GID,
    SANDBOX_UID,
    ResourceLimits,
    Sandbox,
    SandboxError,
    get_backend,
)
from toolproof.sandbox._cgroup import host_support
from toolproof.sandbox._errors import SpawnerLost, StartRefused
from toolproof.sandbox.bwrap import _spawner as spawner_module
from toolproof.sandbox.bwrap._exec_helper import exec_helper
from toolproof.sandbox.bwrap._spawner import Spawner
from toolproof.sandbox.bwrap._spawner_slot import SpawnerSlot
from toolproof.spec import SandboxSpec, WorldSpec
from toolproof.tools import ToolContext, ToolCrash, ToolGateway, load_builtin, registry
from toolproof.tools.gateway import WITNESSED_FAULTS
from toolproof.tools.toolkits.shell import SETTINGS_KEY, episode_shell
from toolproof.trajectory import ToolCall
from toolproof.worlds import World

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "12"))
SMALL = ResourceLimits(wall_s=20, cpu_s=10, memory_mb=256, pids=32, workspace_mb=16)


def _usable() -> None:
    if get_backend("bwrap").unavailable_reason() is not None:
        pytest.skip("bwrap unusable here")
    if os.geteuid() != 0 or not host_support().parents:
        pytest.skip("the spawner needs a root harness with a writable cgroup")


def _warm(box: Sandbox) -> Spawner:
    """Run commands until one went through the spawner; that spawner."""
    deadline = time.monotonic() + 60
    while True:
        assert box.exec("true").ok
        slot = box._slot
        assert slot is None or isinstance(slot, SpawnerSlot)
        if slot is not None and slot._spawner is not None and not slot._spawner._pending:
            return slot._spawner
        assert time.monotonic() < deadline, "the spawner never became ready"
        time.sleep(0.05)


def _way(monkeypatch: pytest.MonkeyPatch, way: str) -> None:
    """Make the sandboxes of this test start commands ``way``."""
    if way != "forked" and exec_helper() is None:
        pytest.skip("nothing built here (no C compiler)")
    if way != "native":
        monkeypatch.setattr(spawner_module, "native_spawner", lambda: None)
    if way == "forked":
        monkeypatch.setattr(spawner_module, "exec_helper", lambda: None)


@contextlib.contextmanager
def _sandbox_user_processes(count: int) -> Iterator[None]:
    """``count`` processes of the sandbox uid (other episodes' commands), killed after."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen(["sleep", "120"], user=SANDBOX_UID, group=SANDBOX_GID,
                                          extra_groups=[], start_new_session=True))  # fmt: skip
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)


@pytest.mark.parametrize("way", ["native", "exec helper", "forked"])
def test_a_start_the_host_refuses_is_a_witnessed_fault_not_the_callers(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    """The exec of bwrap fails with EAGAIN (the sandbox uid is over the spawner's
    RLIMIT_NPROC): a StartRefused, a SpawnerLost the gateway counts as witnessed (the
    episode is an infra_error), with the step and its error in the message; the
    spawner is kept and serves the next command once the limit is back."""
    _usable()
    _way(monkeypatch, way)
    with get_backend("bwrap")(workspace, SMALL) as box:
        spawner = _warm(box)
        pid = spawner.proc.pid
        before = resource.prlimit(pid, resource.RLIMIT_NPROC)
        with _sandbox_user_processes(3):
            resource.prlimit(pid, resource.RLIMIT_NPROC, (1, before[1]))  # a full host limit
            try:
                with pytest.raises(StartRefused) as caught:
                    box.exec("echo hi")
            finally:
                resource.prlimit(pid, resource.RLIMIT_NPROC, before)
        assert isinstance(caught.value, SpawnerLost)
        assert isinstance(caught.value, WITNESSED_FAULTS)
        assert "could not start '" in str(caught.value)
        assert "exec" in str(caught.value) and "temporarily unavailable" in str(caught.value)
        assert box.exec("echo again").stdout == "again\n"
        assert isinstance(box._slot, SpawnerSlot) and box._slot._spawner is spawner


def test_a_start_the_host_refuses_on_the_per_command_path_is_witnessed_too(
    workspace: Path,
) -> None:
    """A sandbox's first command takes the per-command path (its spawner starts in the
    background): the exec of the harness's program as the sandbox uid fails with
    EAGAIN under the harness's own RLIMIT_NPROC, and that is a StartRefused too."""
    _usable()
    with get_backend("bwrap")(workspace, SMALL) as box:
        before = resource.getrlimit(resource.RLIMIT_NPROC)
        with _sandbox_user_processes(3):
            resource.setrlimit(resource.RLIMIT_NPROC, (1, before[1]))  # a full host limit
            try:
                with pytest.raises(StartRefused, match="could not start") as caught:
                    box.exec("echo hi")
            finally:
                resource.setrlimit(resource.RLIMIT_NPROC, before)
        assert isinstance(caught.value, WITNESSED_FAULTS)
        assert "temporarily unavailable" in str(caught.value)


def test_kernel_memory_a_command_left_charged_gets_a_fresh_cgroup(workspace: Path) -> None:
    """An inode bomb (20,000 empty workspace files, ~1 KiB of kernel memory each, no
    tmpfs pages) left ~19 MiB charged to the sandbox cgroup and every later command of
    a 32 MiB sandbox was OOM-killed; now the helper and its cgroup are replaced."""
    _usable()
    limits = ResourceLimits(wall_s=60, memory_mb=32, pids=24, workspace_mb=512)
    with get_backend("bwrap")(workspace, limits) as box:
        first = _warm(box)
        bomb = "i=0; while [ $i -lt 20000 ]; do : > f$i; i=$((i+1)); done; echo made"
        assert box.exec(bomb).stdout == "made\n"
        hog = ["python3", "-c", "b = bytearray(12 << 20); print(len(b))"]
        for _ in range(2):
            result = box.exec(hog)
            assert result.ok and result.limit_hit is None, result
        assert isinstance(box._slot, SpawnerSlot) and box._slot._spawner is not first
        assert box.exec("ls | wc -l").stdout == "20000\n"  # the files stay; their charge left


_UNPASSABLE = st.sampled_from(["\0", "\ud800", "\udfff", "a\0", "\udbff\udbff"])


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    where=st.sampled_from(["env name", "env value", "cwd", "argv"]),
    before=st.text(alphabet="abc/", max_size=3),
    bad=_UNPASSABLE,
)
def test_a_string_no_program_can_be_given_is_the_callers_error(
    box: Sandbox, where: str, before: str, bad: str
) -> None:
    """Through the real backend: a NUL byte or a lone surrogate in a variable, the
    directory or a word of the command is the caller's SandboxError, refused before the
    spawner (never a StartRefused, never a SpawnerLost); the same spawner runs on."""
    spawner = box._slot._spawner if isinstance(box._slot, SpawnerSlot) else None
    text = before + bad
    env, cwd, command = {"A": "1"}, "/workspace", ["/bin/echo", "x"]
    if where == "env name":
        env = {"A" + text: "1"}
    elif where == "env value":
        env = {"A": text}
    elif where == "cwd":
        cwd = "/workspace/" + text
    else:
        command = ["/bin/echo", text]
    with pytest.raises(SandboxError, match=r"NUL byte|lone surrogate|not a valid name") as caught:
        box.exec(command, env=env, cwd=cwd)
    assert not isinstance(caught.value, SpawnerLost)
    assert box.exec("echo on").stdout == "on\n"
    assert isinstance(box._slot, SpawnerSlot) and box._slot._spawner is spawner is not None


@pytest.fixture
def box(workspace: Path) -> Iterator[Sandbox]:
    """A bwrap sandbox whose commands go through its spawner, ready."""
    _usable()
    with get_backend("bwrap")(workspace, SMALL) as sandbox:
        _warm(sandbox)
        yield sandbox


def test_through_the_gateway_a_start_the_host_refuses_is_an_infra_error(tmp_path: Path) -> None:
    """run_command's call ends in a witnessed ToolCrash (the episode's infra_error,
    retried), not in a tool error or crash charged to the agent."""
    _usable()
    load_builtin()
    world = World(WorldSpec(files={"a.txt": "a\n"}), tmp_root=tmp_path)
    ctx = ToolContext(world=world, scratch={SETTINGS_KEY: SandboxSpec(backend="bwrap", wall_s=30)})
    gateway = ToolGateway([registry()["run_command"]], ctx, timeout_s=60)
    try:
        spawner = _warm(episode_shell(ctx).box)
        pid = spawner.proc.pid
        before = resource.prlimit(pid, resource.RLIMIT_NPROC)
        with _sandbox_user_processes(3):
            resource.prlimit(pid, resource.RLIMIT_NPROC, (1, before[1]))  # a full host limit
            try:
                call = ToolCall(id="c1", name="run_command", arguments={"command": "echo hi"})
                with pytest.raises(ToolCrash, match="could not start"):
                    asyncio.run(gateway.call(call))
            finally:
                resource.prlimit(pid, resource.RLIMIT_NPROC, before)
        assert gateway.crash_witnessed
    finally:
        world.close()
