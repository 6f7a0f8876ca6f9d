"""The built-in toolkits: files stay in /workspace, the calculator never evals."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.spec import Task, WorldSpec
from toolproof.tools import (
    ToolContext,
    ToolGateway,
    load_builtin,
    registry,
    resolve_tools,
    toolkits,
)
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World
from toolproof_helpers import make_task

FILE_TOOLS = ["list_files", "read_file", "create_file", "write_file", "delete_file", "search_files"]


@pytest.fixture
def files_world(tmp_path: Path) -> Iterator[World]:
    (tmp_path / "secret.txt").write_text("top secret")
    world = World(
        WorldSpec(files={"data/a.txt": "alpha\nneedle here\n", "notes.md": "no needle"}),
        tmp_root=tmp_path,
    )
    assert world.workspace is not None
    os.symlink("/etc", world.workspace.root / "etc-link")
    os.symlink(tmp_path / "secret.txt", world.workspace.root / "secret-link")
    yield world
    world.close()


async def _run(world: World, name: str, **arguments: Any) -> ToolResult:
    load_builtin()
    tools = [registry()[n] for n in [*FILE_TOOLS, "calculate", "get_stock", "create_order"]]
    gateway = ToolGateway(tools, ToolContext(world=world))
    return await gateway.call(ToolCall(id="c", name=name, arguments=arguments))


async def test_file_tools_work_inside_the_workspace(files_world: World) -> None:
    listing = await _run(files_world, "list_files", path="/workspace")
    assert listing.content == (
        '["/workspace/data/", "/workspace/etc-link", "/workspace/notes.md", '
        '"/workspace/secret-link"]'
    )
    assert (await _run(files_world, "read_file", path="data/a.txt")).content == (
        "alpha\nneedle here\n"
    )
    assert not (
        await _run(files_world, "write_file", path="/workspace/new/b.txt", content="b")
    ).is_error
    hits = await _run(files_world, "search_files", text="needle", path="/workspace/data")
    assert hits.content == '[{"path": "/workspace/data/a.txt", "line": 2, "text": "needle here"}]'
    assert not (await _run(files_world, "delete_file", path="notes.md")).is_error
    assert files_world.workspace is not None
    assert not (files_world.workspace.root / "notes.md").exists()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": "/workspace/../secret.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "secret-link"}),
        ("read_file", {"path": "etc-link/passwd"}),
        ("list_files", {"path": "/etc"}),
        ("list_files", {"path": "etc-link"}),
        ("write_file", {"path": "../escape.txt", "content": "x"}),
        ("write_file", {"path": "etc-link/evil", "content": "x"}),
        ("delete_file", {"path": "/tmp/anything"}),
        ("search_files", {"text": "secret", "path": ".."}),
        ("create_file", {"path": "/workspace/../../x"}),
    ],
)
async def test_paths_outside_the_workspace_are_error_results(
    files_world: World, tmp_path: Path, name: str, arguments: dict[str, Any]
) -> None:
    result = await _run(files_world, name, **arguments)
    assert result.is_error and result.error_kind == "policy_violation"
    assert "top secret" not in result.content and "root:" not in result.content
    assert not (tmp_path / "escape.txt").exists()
    assert (tmp_path / "secret.txt").read_text() == "top secret"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_file", {"path": "data/a.txt/inner", "content": "x"}),  # a file is in the way
        ("create_file", {"path": "data/a.txt/inner"}),
        ("write_file", {"path": "x" * 300, "content": "x"}),  # name too long
        ("read_file", {"path": "x" * 300}),
        ("read_file", {"path": "a\x00b"}),
        ("read_file", {"path": "data"}),
        ("delete_file", {"path": "data"}),
        ("read_file", {"path": "missing.txt"}),
        ("create_file", {"path": "notes.md"}),
        ("list_files", {"path": "notes.md"}),
    ],
)
async def test_bad_paths_are_tool_errors_not_crashes(
    files_world: World, name: str, arguments: dict[str, Any]
) -> None:
    result = await _run(files_world, name, **arguments)
    assert result.is_error and result.error_kind == "tool_error", result.content
    assert "toolproof-ws-" not in result.content  # the real directory stays hidden


async def test_file_tools_need_a_workspace() -> None:
    result = await _run(World(WorldSpec()), "read_file", path="a.txt")
    assert result.is_error and "no workspace" in result.content


@pytest.mark.parametrize(
    ("expression", "value"),
    [("(15 + 27) * 2", 84), ("10 / 4", 2.5), ("2 ** 10", 1024), ("sqrt(81)", 9), ("7 // 2", 3)],
)
async def test_calculator_computes(expression: str, value: float) -> None:
    result = await _run(World(WorldSpec()), "calculate", expression=expression)
    assert not result.is_error
    assert result.content == f'{{"expression": "{expression}", "result": {value}}}'


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('touch /tmp/toolproof-pwned')",
        "__import__('os')",
        "open('/etc/passwd').read()",
        "(1).__class__.__mro__",
        "[x for x in (1, 2)]",
        "lambda: 0",
        "'a' * 3",
        "1 < 2",
        "10 ** 100000",
        "sqrt(-1)",
        "1 / 0",
    ],
)
async def test_calculator_never_evals(expression: str) -> None:
    result = await _run(World(WorldSpec()), "calculate", expression=expression)
    assert result.is_error and result.error_kind == "tool_error", result.content
    assert not Path("/tmp/toolproof-pwned").exists()


async def test_records_toolkits_change_the_world() -> None:
    world = World(
        WorldSpec(
            records={
                "products": {"A": {"name": "Bolt", "stock": 3}},
                "customers": {"C1": {"name": "Ada"}},
            }
        )
    )
    order = await _run(world, "create_order", customer_id="C1", product_id="A", quantity=2)
    assert '"order_id": "O2001"' in order.content
    assert world.records["products"]["A"]["stock"] == 1
    too_many = await _run(world, "create_order", customer_id="C1", product_id="A", quantity=5)
    assert too_many.is_error and "only 1 units" in too_many.content


def test_resolve_tools_in_task_order_without_duplicates() -> None:
    task = Task.model_validate(make_task(tools=["get_stock", "inventory.*", "calculate"]))
    names = [t.schema.name for t in resolve_tools(task)]
    assert names[0] == "get_stock" and names[-1] == "calculate"
    assert sorted(names[:-1]) == toolkits()["inventory"]
    assert len(names) == len(set(names))


def test_resolve_tools_names_unknown_tools_and_toolkits() -> None:
    from toolproof.spec import SpecError

    task = Task.model_validate(make_task(tools=["get_stok", "nokit.*"]))
    with pytest.raises(SpecError) as info:
        resolve_tools(task)
    messages = [p.message for p in info.value.problems]
    assert any("no tool 'get_stok'" in m for m in messages)
    assert any("no toolkit 'nokit'" in m and "inventory" in m for m in messages)
