"""Plug-ins: the ``toolproof`` entry-point group, loaded once; broken ones reported; opt-out."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof import _plugins
from toolproof.tools import registry, toolkits
from toolproof_helpers import FIXTURES, CliResult, make_task

Invoke = Callable[..., CliResult]
PLUGIN_SRC = FIXTURES / "plugin_pkg"


def _site(root: Path, **entry_points: str) -> Path:
    """A directory that looks like site-packages holding the fake plug-in's distribution."""
    info = root / "toolproof_fake_plugin-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toolproof-fake-plugin\nVersion: 0.1.0\n"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[toolproof]\n{lines}")
    return root


@pytest.fixture
def installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_registries: None
) -> Callable[..., Path]:
    """``installed(name=target, ...)`` puts the fake plug-in on sys.path with these entry points."""

    def install(**entry_points: str) -> Path:
        site = _site(tmp_path / "site", **entry_points)
        monkeypatch.syspath_prepend(str(PLUGIN_SRC))
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.delenv("TOOLPROOF_NO_PLUGINS", raising=False)
        return site

    return install


def test_a_plugin_loads_once_and_registers_its_tools(installed: Callable[..., Path]) -> None:
    installed(fake="toolproof_fake_plugin:register")
    assert "fake_echo" not in registry()
    loaded = _plugins.load_plugins()
    assert loaded == {"fake": None}
    assert registry()["fake_echo"].toolkit == "fake"
    assert toolkits()["fake"] == ["fake_echo"]
    assert _plugins.load_plugins() is loaded  # lazily, once
    import toolproof_fake_plugin

    assert toolproof_fake_plugin.CALLS == 1


def test_a_broken_plugin_is_reported_not_fatal(installed: Callable[..., Path]) -> None:
    installed(fake="toolproof_fake_plugin:register", broken="toolproof_fake_plugin.broken")
    loaded = _plugins.load_plugins()
    assert loaded["fake"] is None
    assert loaded["broken"] == "RuntimeError: the fake plug-in is broken on purpose"
    assert "fake_echo" in registry()


def test_disabled_plugins_are_not_loaded(installed: Callable[..., Path]) -> None:
    installed(fake="toolproof_fake_plugin:register")
    assert _plugins.load_plugins(enabled=False) == {}
    assert "fake_echo" not in registry()


def test_the_cli_loads_plugins_and_warns_about_broken_ones(
    installed: Callable[..., Path], invoke: Invoke
) -> None:
    installed(fake="toolproof_fake_plugin:register", broken="toolproof_fake_plugin.broken")
    result = invoke("list")
    assert result.code == 0, result.err
    assert "fake: fake_echo" in result.out
    assert "warning: plug-in 'broken' failed to load: RuntimeError" in result.err


def test_the_cli_runs_a_task_that_uses_a_plugin_tool(
    installed: Callable[..., Path],
    invoke: Invoke,
    suite_dir: Callable[..., Path],
    tmp_path: Path,
) -> None:
    installed(fake="toolproof_fake_plugin:register")
    task = make_task(
        tools=["fake_echo"],
        success=[
            {"kind": "process", "must_call": [{"tool": "fake_echo", "args": {"text": "hi"}}]},
            {"kind": "custom", "function": "fake_answer_is_loud"},
        ],
        solution={"calls": [{"tool": "fake_echo", "args": {"text": "hi"}}], "answer": "HI"},
    )
    root = suite_dir([task])
    result = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "run", "-q")
    assert result.code == 0, result.err
    assert '"successes": 1' in (tmp_path / "run" / "summary.json").read_text()


def test_toolproof_no_plugins_turns_autoload_off(
    installed: Callable[..., Path], invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(fake="toolproof_fake_plugin:register", broken="toolproof_fake_plugin.broken")
    monkeypatch.setenv("TOOLPROOF_NO_PLUGINS", "1")
    result = invoke("list")
    assert result.code == 0, result.err
    assert "fake_echo" not in result.out
    assert "warning" not in result.err
    assert "fake_echo" not in registry()


def test_a_fresh_process_finds_the_entry_point(
    tmp_path: Path, suite_dir: Callable[..., Path]
) -> None:
    site = _site(tmp_path / "site", fake="toolproof_fake_plugin:register")
    root = suite_dir([make_task(tools=["fake_echo"], solution={"answer": "7"})])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN_SRC)])}
    env.pop("TOOLPROOF_NO_PLUGINS", None)
    command = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]
    loaded = subprocess.run(
        [*command, "validate", str(root)], capture_output=True, text=True, env=env, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr  # the plug-in's tool exists
    off = subprocess.run(
        [*command, "validate", str(root)],
        capture_output=True,
        text=True,
        env={**env, "TOOLPROOF_NO_PLUGINS": "1"},
        timeout=120,
    )
    assert off.returncode == 2 and "no tool 'fake_echo'" in off.stderr
