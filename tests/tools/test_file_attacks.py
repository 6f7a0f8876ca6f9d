"""A hostile workspace against every file tool: links, FIFOs, sockets, devices, odd names, size.

Each test plants what an agent's commands could leave in /workspace, calls the tools
through the real gateway and asserts the harness neither follows, blocks, crashes
nor leaks: nothing from outside the workspace (a secret file, /etc/shadow, the
harness's own environment) ever appears in a result. Every test runs twice: with
``openat2`` and with the ``O_NOFOLLOW`` walk used where the kernel lacks it.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.agents import AgentTurn, Observation
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.scoring import Score
from toolproof.spec import Limits, Task, TaskInstance, WorldSpec, render
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits import files as files_toolkit
from toolproof.trajectory import Termination, ToolCall, ToolResult, Trajectory
from toolproof.worlds import World, _safefs
from toolproof_helpers import bind_unix, make_task

FILE_TOOLS = ["list_files", "read_file", "create_file", "write_file", "delete_file", "search_files"]
SECRET = "sk-outside-secret-4711"
TIMEOUT_S = 30.0
"""The gateway's limit in these tests: a hang shows up as a timeout result, not a stuck run."""


def _harness_environment() -> list[str]:
    """``KEY=value`` pairs of this process's real environment block (what /proc shows)."""
    with open("/proc/self/environ", "rb") as handle:
        pairs = handle.read().split(b"\0")
    return [p.decode("utf-8", "replace") for p in pairs if len(p) > 12]


ENVIRON = _harness_environment()


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run with openat2, then again with the per-component O_NOFOLLOW walk."""
    monkeypatch.setattr(_safefs, "_openat2_ok", None if request.param == "openat2" else False)
    return str(request.param)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(f"{SECRET}\n")
    return out


@pytest.fixture
def world(tmp_path: Path, outside: Path, resolver: str) -> Iterator[World]:
    built = World(WorldSpec(files={"data/a.txt": "alpha\nneedle\n"}), tmp_root=tmp_path)
    yield built
    built.close()


def root(world: World) -> Path:
    assert world.workspace is not None
    return world.workspace.root


async def call(world: World, name: str, **arguments: Any) -> ToolResult:
    load_builtin()
    tools = [registry()[n] for n in FILE_TOOLS]
    gateway = ToolGateway(tools, ToolContext(world=world), timeout_s=TIMEOUT_S)
    result = await gateway.call(ToolCall(id="c", name=name, arguments=arguments))
    result.model_dump_json()  # every result can be recorded (no lone surrogates)
    return result


def assert_no_leak(result: ToolResult) -> None:
    assert SECRET not in result.content
    assert "root:" not in result.content  # /etc/shadow, /etc/passwd
    for pair in ENVIRON:
        assert pair not in result.content, "the harness's environment leaked"
    assert result.error_kind != "timeout", result.content
    assert "toolproof-ws-" not in result.content  # the real directory stays hidden


def all_tools(path: str) -> list[tuple[str, dict[str, Any]]]:
    """Every file tool aimed at ``path``."""
    return [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "overwritten"}),
        ("create_file", {"path": path}),
        ("delete_file", {"path": path}),
        ("list_files", {"path": path}),
        ("list_files", {"path": path, "recursive": True}),
        ("search_files", {"text": "sk-", "path": path}),
        ("search_files", {"text": "e", "path": path}),
    ]


def plant_links(world: World, outside: Path) -> None:
    ws = root(world)
    os.symlink("/etc/shadow", ws / "shadow")
    os.symlink("/proc/self/environ", ws / "environ")
    os.symlink(outside, ws / "outdir")
    os.symlink(outside / "secret.txt", ws / "secret")
    os.symlink("../../outside", ws / "relative-out")
    os.symlink("data", ws / "inside")  # a link that stays inside is not followed either


LINK_PATHS = [
    "shadow",
    "environ",
    "outdir",
    "outdir/secret.txt",
    "secret",
    "relative-out/secret.txt",
    "/workspace/inside/a.txt",
    "inside",
]


@pytest.mark.parametrize("path", LINK_PATHS)
async def test_no_tool_follows_a_link(world: World, outside: Path, path: str) -> None:
    plant_links(world, outside)
    for name, arguments in all_tools(path):
        result = await call(world, name, **arguments)
        assert_no_leak(result)
        if name == "delete_file" and "/" not in path.removeprefix("/workspace/"):
            assert not result.is_error  # removing a link removes the link itself
            plant_links_again(world, outside)
        else:
            assert result.is_error, (name, path, result.content)
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing written
    assert Path("/etc/shadow").exists()


def plant_links_again(world: World, outside: Path) -> None:
    for child in root(world).iterdir():
        if child.is_symlink():
            child.unlink()
    plant_links(world, outside)


async def test_links_are_listed_and_searched_around_never_through(
    world: World, outside: Path
) -> None:
    plant_links(world, outside)
    listing = await call(world, "list_files", recursive=True)
    assert not listing.is_error
    assert json.loads(listing.content) == [
        "/workspace/data/",
        "/workspace/data/a.txt",
        "/workspace/environ",
        "/workspace/inside",
        "/workspace/outdir",
        "/workspace/relative-out",
        "/workspace/secret",
        "/workspace/shadow",
    ]
    for text in ("KEY", "PATH", "root", "sk-", "="):
        hits = await call(world, "search_files", text=text)
        assert not hits.is_error and json.loads(hits.content) == [], hits.content
        assert_no_leak(hits)
    found = await call(world, "search_files", text="needle")
    assert json.loads(found.content) == [
        {"path": "/workspace/data/a.txt", "line": 2, "text": "needle"}
    ]


async def test_a_link_out_is_a_policy_violation_a_link_inside_a_plain_error(
    world: World, outside: Path
) -> None:
    plant_links(world, outside)
    out = await call(world, "read_file", path="outdir/secret.txt")
    assert out.error_kind == "policy_violation" and "leads outside" in out.content
    inside = await call(world, "read_file", path="inside/a.txt")
    assert inside.error_kind == "tool_error"
    assert "/workspace/inside is a symbolic link (to 'data')" in inside.content


async def test_a_symlinked_parent_is_not_written_through(world: World, outside: Path) -> None:
    plant_links(world, outside)
    for path in ("outdir/new.txt", "outdir/deeper/new.txt", "relative-out/x", "shadow"):
        for name in ("write_file", "create_file"):
            arguments = {"path": path, "content": "x"} if name == "write_file" else {"path": path}
            result = await call(world, name, **arguments)
            assert result.is_error, (name, path)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/workspace/../outside/secret.txt", "/etc/shadow", "/proc"]
)
async def test_dot_dot_and_absolute_paths_are_refused(world: World, path: str) -> None:
    for name, arguments in all_tools(path):
        result = await call(world, name, **arguments)
        assert result.is_error and result.error_kind == "policy_violation", (name, result)
        assert_no_leak(result)


@pytest.fixture
def watchdog(world: World) -> Iterator[None]:
    """Opens every FIFO in the workspace for writing after a while, so a regression that
    blocks in ``open()`` fails the test instead of hanging the test run."""
    done = threading.Event()

    def unblock() -> None:
        if done.wait(TIMEOUT_S * 2):
            return
        for pipe in root(world).rglob("*"):
            if pipe.is_fifo():
                fd = os.open(pipe, os.O_RDWR | os.O_NONBLOCK)
                os.close(fd)

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    yield
    done.set()


async def test_a_fifo_never_blocks_any_tool(world: World, watchdog: None) -> None:
    os.mkfifo(root(world) / "pipe")
    os.mkfifo(root(world) / "data" / "pipe2")
    for name, arguments in all_tools("pipe"):
        if name == "delete_file":
            continue
        result = await call(world, name, **arguments)
        assert_no_leak(result)
        if name == "create_file":
            assert result.is_error and "already exists" in result.content
        elif not name.endswith("_files"):
            assert result.is_error and "named pipe (FIFO)" in result.content, result.content
    hits = await call(world, "search_files", text="needle")
    assert json.loads(hits.content) == [
        {"path": "/workspace/data/a.txt", "line": 2, "text": "needle"}
    ]
    listing = await call(world, "list_files", path="data")
    assert json.loads(listing.content) == ["/workspace/data/a.txt", "/workspace/data/pipe2"]
    assert stat.S_ISFIFO((root(world) / "pipe").lstat().st_mode)  # never replaced or written
    assert not (await call(world, "delete_file", path="pipe")).is_error  # removing it is fine


async def test_a_fifo_with_a_reader_is_not_written(world: World, watchdog: None) -> None:
    pipe = root(world) / "pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = await call(world, "write_file", path="pipe", content="into the pipe")
        assert result.is_error and "named pipe (FIFO)" in result.content
        assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)


async def test_a_socket_is_refused(world: World) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        bind_unix(server, root(world) / "sock")
        server.listen(1)
        for name, arguments in all_tools("sock"):
            if name in ("delete_file", "list_files", "search_files"):
                continue
            result = await call(world, name, **arguments)
            assert result.is_error, (name, result.content)
            if name != "create_file":
                assert "a socket" in result.content, (name, result.content)
        hits = await call(world, "search_files", text="e")
        assert not hits.is_error
    finally:
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
async def test_a_device_node_is_never_opened(world: World) -> None:
    node = root(world) / "zero"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero
    for name, arguments in all_tools("zero"):
        if name in ("delete_file", "list_files", "search_files"):
            continue
        result = await call(world, name, **arguments)
        assert result.is_error and result.error_kind != "timeout", (name, result.content)
        if name != "create_file":
            assert "character device" in result.content, (name, result.content)
    assert not (await call(world, "search_files", text="\0")).is_error
    assert stat.S_ISCHR(node.lstat().st_mode)


ODD_NAMES = [b"caf\xe9.txt", b"new\nline.txt", b"tab\tand\x1b[31mred", b"\xff\xfe", b"x" * 255]


async def test_odd_names_are_shown_safely_and_never_crash(world: World) -> None:
    for name in ODD_NAMES:
        with open(os.path.join(os.fsencode(root(world)), name), "wb") as handle:
            handle.write(b"needle in an odd name\n")
    listing = await call(world, "list_files")
    assert not listing.is_error
    shown = json.loads(listing.content)
    assert "/workspace/caf\\xe9.txt" in shown and "/workspace/\\xff\\xfe" in shown
    assert "/workspace/new\nline.txt" in shown  # JSON escapes it for whoever prints it
    hits = await call(world, "search_files", text="needle in")
    assert sorted(h["path"] for h in json.loads(hits.content)) == sorted(
        "/workspace/" + n.decode("utf-8", "backslashreplace") for n in ODD_NAMES
    )
    # Harness code reaches a name that is not UTF-8 with Python's escape ("\udce9"); an
    # agent cannot send one (the ingress refuses lone surrogates), it uses commands.
    read = await call(world, "read_file", path="caf\udce9.txt")
    assert read.content == "needle in an odd name\n"
    bad = await call(world, "read_file", path="lone\ud800surrogate")
    assert bad.is_error and "invalid path" in bad.content
    long = await call(world, "write_file", path="y" * 256, content="x")
    assert long.is_error and long.error_kind == "tool_error"
    deep = await call(world, "write_file", path="/".join(["d" * 200] * 30), content="x")
    assert deep.is_error or not deep.is_error  # either way: a result, not a crash
    assert_no_leak(deep)


async def test_reads_are_capped(world: World) -> None:
    huge = root(world) / "huge.bin"
    with open(huge, "wb") as handle:
        handle.truncate(8 << 30)  # 8 GiB, sparse
    result = await call(world, "read_file", path="huge.bin")
    assert len(result.content) < files_toolkit.MAX_READ_BYTES + 200
    assert result.content.endswith("the file is longer]")
    hits = await call(world, "search_files", text="\0")  # skipped, not read
    assert json.loads(hits.content) == []


async def test_walks_are_bounded(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    many = root(world) / "many"
    many.mkdir()
    for n in range(300):
        (many / f"f{n:03}").write_text("needle\n")
    monkeypatch.setattr(files_toolkit, "MAX_LIST_ENTRIES", 100)
    monkeypatch.setattr(files_toolkit, "MAX_SEARCH_ENTRIES", 50)
    listing = json.loads((await call(world, "list_files", recursive=True)).content)
    assert len(listing) == 101 and listing[-1].startswith("[listing stopped: more than 100")
    hits = json.loads((await call(world, "search_files", text="needle", path="many")).content)
    assert 0 < len(hits) <= 51
    assert hits[-1] == {"note": "search stopped: more than 50 entries; search a smaller directory"}


async def test_a_deep_tree_is_bounded(world: World) -> None:
    fd = os.open(root(world), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(100):  # deeper than PATH_MAX allows to name in one path
            os.mkdir(b"d" * 60, dir_fd=fd)
            nxt = os.open(b"d" * 60, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open(b"bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("needle\n")
    finally:
        os.close(fd)
    listing = json.loads((await call(world, "list_files", recursive=True)).content)
    assert listing[-1] == "[listing stopped: deeper than 64 directories; list a smaller directory]"
    hits = await call(world, "search_files", text="needle")
    assert not hits.is_error
    assert json.loads(hits.content)[-1]["note"].startswith("search stopped: deeper than 64")


async def test_written_files_belong_to_the_sandbox_user(world: World) -> None:
    assert world.workspace is not None
    owner = world.workspace.owner
    await call(world, "write_file", path="new/dir/f.txt", content="x")
    await call(world, "create_file", path="new/empty.txt")
    if owner is None:
        pytest.skip("the harness is not root: files stay its own")
    for path in ("new", "new/dir", "new/dir/f.txt", "new/empty.txt", "data", "data/a.txt"):
        info = (root(world) / path).lstat()
        assert (info.st_uid, info.st_gid) == owner, path


async def test_a_hard_link_is_replaced_never_written_through(world: World, outside: Path) -> None:
    os.link(outside / "secret.txt", root(world) / "hard")
    result = await call(world, "write_file", path="hard", content="new")
    assert not result.is_error
    assert (root(world) / "hard").read_text() == "new"
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"


async def test_file_tools_run_off_the_event_loop() -> None:
    load_builtin()
    assert all(registry()[name].blocking for name in FILE_TOOLS)


async def test_a_slow_tool_leaves_the_loop_free(world: World, watchdog: None) -> None:
    """While a file tool runs in its thread, other coroutines go on (an event, no sleeps)."""
    started = threading.Event()
    release = threading.Event()
    real = files_toolkit._workspace

    def slow(ctx: ToolContext) -> Any:
        started.set()
        assert release.wait(TIMEOUT_S)
        return real(ctx)

    pending = asyncio.ensure_future(call_with(world, slow))
    assert await asyncio.to_thread(started.wait, TIMEOUT_S)
    release.set()  # the loop ran this line while the tool was still inside its call
    assert not (await pending).is_error


async def call_with(world: World, patched: Any) -> ToolResult:
    original = files_toolkit._workspace
    files_toolkit._workspace = patched  # type: ignore[assignment]
    try:
        return await call(world, "read_file", path="data/a.txt")
    finally:
        files_toolkit._workspace = original  # type: ignore[assignment]


class Hostile:
    """Makes a FIFO and links with run_command, then aims every file tool at them."""

    def __init__(self, in_files: asyncio.Event, others_done: asyncio.Event) -> None:
        self.in_files = in_files
        self.others_done = others_done

    async def act(self, observation: Observation) -> AgentTurn:
        if observation.step == 0:
            command = (
                "mkfifo pipe && ln -s /proc/self/environ env && ln -s /etc/shadow shadow"
                " && ln -s / host && mkdir d && ln -s ../../../outside d/up"
                " && printf 'caf\\351' > odd"
                " && ln -s odd \"$(printf 'caf\\351')\""
            )
            return AgentTurn(
                tool_calls=[ToolCall(id="c0", name="run_command", arguments={"command": command})]
            )
        if observation.step == 1:
            calls = [
                ("read_file", {"path": "pipe"}),
                ("read_file", {"path": "env"}),
                ("read_file", {"path": "shadow"}),
                ("read_file", {"path": "host/etc/passwd"}),
                ("read_file", {"path": "d/up/secret.txt"}),
                ("search_files", {"text": "KEY"}),
                ("search_files", {"text": "="}),
                ("list_files", {"path": "/workspace", "recursive": True}),
                ("list_files", {"path": "host"}),
                ("write_file", {"path": "pipe", "content": "x"}),
                ("write_file", {"path": "host/tmp/owned", "content": "x"}),
                ("create_file", {"path": "d/up/owned"}),
            ]
            self.in_files.set()
            return AgentTurn(
                tool_calls=[
                    ToolCall(id=f"c1_{n}", name=name, arguments=args)
                    for n, (name, args) in enumerate(calls)
                ]
            )
        await asyncio.wait_for(self.others_done.wait(), 120)
        return AgentTurn(content="done")


class Neighbour:
    """An ordinary episode that runs while the hostile one is inside its file tools."""

    def __init__(self, start: asyncio.Event, done: asyncio.Event) -> None:
        self.start = start
        self.done = done

    async def act(self, observation: Observation) -> AgentTurn:
        if observation.step == 0:
            await asyncio.wait_for(self.start.wait(), 120)
            return AgentTurn(
                tool_calls=[ToolCall(id="n0", name="get_stock", arguments={"product_id": "A"})]
            )
        self.done.set()
        return AgentTurn(content="There are 7 units.")


def test_an_episode_with_a_hostile_workspace_ends_normally_and_delays_no_one(
    tmp_path: Path, outside: Path
) -> None:
    hostile_task = make_task(
        id="hostile",
        tools=["run_command", *FILE_TOOLS],
        world={"files": {"keep.txt": "keep me\n"}},
        success=[{"kind": "state", "files": {"keep.txt": "keep me\n"}}],
        solution={"calls": [], "answer": "done"},
    )

    def instance(task: dict[str, Any]) -> TaskInstance:
        return render(
            Task.model_validate(task),
            suite="t",
            suite_seed=1,
            epoch=0,
            limits=Limits(),
            system_prompt="Use the tools.",
        )

    async def both() -> list[tuple[Trajectory, Score]]:
        in_files, neighbour_done = asyncio.Event(), asyncio.Event()
        options = EpisodeOptions(
            agent_label="scripted", sandbox_backend="process", tmp_root=tmp_path
        )
        hostile = run_episode(
            instance(hostile_task), lambda ctx: Hostile(in_files, neighbour_done), options
        )
        neighbour = run_episode(
            instance(make_task(id="calm")), lambda ctx: Neighbour(in_files, neighbour_done), options
        )
        return await asyncio.wait_for(asyncio.gather(hostile, neighbour), 300)

    (hostile, _), (calm, calm_score) = asyncio.run(both())
    assert hostile.termination is Termination.COMPLETED, hostile.error
    assert calm.termination is Termination.COMPLETED and calm_score.passed
    results = [r for step in hostile.steps for r in step.results]
    assert len(results) == 13 and not results[0].is_error
    for result in results[1:]:
        assert_no_leak(result)
    by_call = {r.call_id: r for r in results}
    assert "named pipe (FIFO)" in by_call["c1_0"].content
    assert all(by_call[f"c1_{n}"].is_error for n in (0, 1, 2, 3, 4, 9, 10, 11))
    hostile.model_dump_json()  # the odd name is recordable
    assert not Path("/tmp/owned").exists() and sorted(os.listdir(outside)) == ["secret.txt"]
