"""Plug-ins: the ``toolproof`` entry-point group, loaded once; broken ones reported; opt-out."""

from __future__ import annotations

import json
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


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plug-in cache file; every file counts as settled (the two-second rule: below)."""
    monkeypatch.setattr(_plugins, "_SETTLED_NS", 0)
    return tmp_path / "cache" / "plugins.json"


def _empty_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site folder with one distribution that has no ``toolproof`` entry point."""
    site = tmp_path / "site"
    other = site / "unrelated-1.0.dist-info"
    other.mkdir(parents=True)
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: unrelated\nVersion: 1.0\n")
    (other / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n")
    monkeypatch.syspath_prepend(str(PLUGIN_SRC))
    monkeypatch.syspath_prepend(str(site))
    return site


def test_the_entry_points_are_cached_and_a_plugin_installed_later_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    site = _empty_site(tmp_path, monkeypatch)
    assert _plugins.find_entry_points(cache) == []
    data = json.loads(cache.read_text())
    data["entry_points"] = [["forged", "toolproof_fake_plugin:register"]]
    cache.write_text(json.dumps(data))
    assert _plugins.find_entry_points(cache) == [("forged", "toolproof_fake_plugin:register")]
    _site(site, fake="toolproof_fake_plugin:register")  # installed after the cache was built
    assert _plugins.find_entry_points(cache) == [("fake", "toolproof_fake_plugin:register")]
    assert _plugins.find_entry_points(cache) == [("fake", "toolproof_fake_plugin:register")]


def test_an_entry_points_file_rewritten_in_place_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    site = _empty_site(tmp_path, monkeypatch)
    _site(site, fake="toolproof_fake_plugin:register")
    assert [name for name, _ in _plugins.find_entry_points(cache)] == ["fake"]
    points = site / "toolproof_fake_plugin-0.1.0.dist-info" / "entry_points.txt"
    points.write_text("[toolproof]\nfake = toolproof_fake_plugin:register\nmore = x:y\n")
    assert [name for name, _ in _plugins.find_entry_points(cache)] == ["fake", "more"]


def test_nothing_is_cached_while_a_file_is_younger_than_two_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _empty_site(tmp_path, monkeypatch)
    _site(site, fake="toolproof_fake_plugin:register")  # just written
    cache = tmp_path / "plugins.json"
    assert [name for name, _ in _plugins.find_entry_points(cache)] == ["fake"]
    assert not cache.exists()


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{truncated",
        json.dumps({"version": 999, "stamp": "S", "entry_points": []}),  # another version
        json.dumps({"version": 1, "stamp": "other", "entry_points": []}),
        json.dumps({"version": 1, "stamp": "S", "entry_points": [["a"]]}),
        json.dumps({"version": 1, "stamp": "S", "entry_points": [["a", 1]]}),
        json.dumps({"version": 1, "stamp": "S", "entry_points": [["a", "os; rm -rf /"]]}),
        json.dumps({"version": 1, "stamp": "S", "entry_points": "a"}),
        json.dumps([1, 2]),
    ],
)
def test_a_corrupt_tampered_or_foreign_plugin_cache_is_refused(
    tmp_path: Path, content: str
) -> None:
    cache = tmp_path / "plugins.json"
    cache.write_text(content)
    assert _plugins._read(cache, "S") is None


def test_a_corrupt_cache_is_rescanned_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    site = _empty_site(tmp_path, monkeypatch)
    _site(site, fake="toolproof_fake_plugin:register")
    cache.parent.mkdir(parents=True)
    cache.write_text('{"version": 1, "stamp": ')
    assert [name for name, _ in _plugins.find_entry_points(cache)] == ["fake"]
    assert json.loads(cache.read_text())["entry_points"] == [
        ["fake", "toolproof_fake_plugin:register"]
    ]


def test_installed_versions_match_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    for name in ("click", "pydantic", "PyYAML"):
        assert _plugins.installed_version(name) == metadata.version(name)
    assert _plugins.installed_version("no-such-distribution-here") is None
    _site(_empty_site(tmp_path, monkeypatch))
    assert _plugins.installed_version("toolproof_fake-plugin") == "0.1.0"
