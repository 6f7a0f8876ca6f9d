"""Fixtures shared by the tests of the executable core (helpers: ``toolproof_helpers.py``).

* ``suite_dir``: writes a small suite from task dicts under tmp_path;
* ``invoke``: the real CLI entry point, in process, with its exit code and output;
* ``restore_registries``: undoes tools, agents, checks and plug-ins a test registers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

if str(Path(__file__).parent) not in sys.path:  # toolproof_helpers, whatever the import mode
    sys.path.insert(0, str(Path(__file__).parent))
from toolproof_helpers import CliResult, write_suite


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The suite index and plug-in cache of this test session in a folder of its own, not
    the user's ``~/.cache/toolproof`` (which other sessions, and other checkouts, share)."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture
def suite_dir(tmp_path: Path) -> Callable[..., Path]:
    """``suite_dir([task, ...], **suite_fields)`` writes a suite under tmp_path."""

    def make(tasks: list[dict[str, Any]], **config: Any) -> Path:
        return write_suite(tmp_path / "suite", tasks, **config)

    return make


@pytest.fixture
def invoke(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """Run ``toolproof ARGS`` through :func:`toolproof.cli.main` (the console script's entry
    point, which turns errors into messages and exit codes) and capture what it printed."""
    from toolproof.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # rich wraps long lines at the terminal width

    def run(*args: str | Path) -> CliResult:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def restore_registries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Undo tools, agent kinds, checks and plug-in state a test registers."""
    from toolproof import _plugins
    from toolproof.agents import agent_kinds
    from toolproof.agents import base as agents_base
    from toolproof.scoring import base as scoring_base
    from toolproof.scoring import evaluators
    from toolproof.scoring.checks import custom
    from toolproof.tools import base as tools_base
    from toolproof.tools import load_builtin, resolve

    load_builtin()  # built-ins stay registered
    agent_kinds()
    evaluators()
    saved = [
        (tools_base._REGISTRY, dict(tools_base._REGISTRY)),
        (agents_base._REGISTRY, dict(agents_base._REGISTRY)),
        (scoring_base._REGISTRY, dict(scoring_base._REGISTRY)),
        (custom._FUNCTIONS, dict(custom._FUNCTIONS)),
    ]
    modules = set(sys.modules)
    _plugins.reset_plugins()
    yield
    for registry, before in saved:
        registry.clear()
        registry.update(before)
    for name in set(sys.modules) - modules:
        if name.startswith("toolproof_fake_plugin"):
            del sys.modules[name]
    monkeypatch.setattr(resolve, "_kits_cache", None)
    _plugins.reset_plugins()
