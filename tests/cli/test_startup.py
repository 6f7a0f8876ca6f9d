"""Fast start: ``toolproof --help`` and a warm ``toolproof list`` import no heavy module.

Timings belong to ``benchmarks/bench_startup.py``; these tests pin the behaviour that
makes start-up fast (what gets imported), in a fresh interpreter each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.cli import COMMANDS, _is_toolproof_error
from toolproof.cli import _common as common
from toolproof.cli._listing import _read, registries
from toolproof.spec import SpecError

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = (
    "pydantic",
    "rich",
    "httpx",
    "jinja2",
    "yaml",
    "asyncio",
    "toolproof.spec.task",
    "toolproof.spec.loader",
    "toolproof.agents",
    "toolproof.tools",
    "toolproof.engine",
)
PROBE = """
import json, sys
from toolproof.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _probe(tmp_path: Path, *args: str) -> tuple[str, set[str]]:
    """Run ``toolproof ARGS`` in a fresh interpreter with its cache under ``tmp_path``:
    what it printed and every module it imported."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("TOOLPROOF_NO_INDEX", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return done.stdout, set(report["modules"])


def _heavy(modules: set[str]) -> list[str]:
    return [m for m in HEAVY if m in modules]


def test_help_imports_no_heavy_module(tmp_path: Path) -> None:
    out, modules = _probe(tmp_path, "--help")
    assert "Commands" in out and all(name in out for name in COMMANDS)
    assert _heavy(modules) == []
    assert not any(m.startswith("toolproof.cli._") for m in modules), "no command module"


@pytest.fixture(scope="module")
def cold_list(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One cold ``toolproof list`` (it loads every built-in suite): its cache and output."""
    home = tmp_path_factory.mktemp("cold")
    out, modules = _probe(home, "list")
    assert "toolproof.spec.loader" in modules and "toolproof.agents" in modules
    return home / "cache", out


def _warm(tmp_path: Path, cold_list: tuple[Path, str]) -> str:
    shutil.copytree(cold_list[0], tmp_path / "cache")
    return cold_list[1]


def test_a_warm_list_imports_no_heavy_module_and_prints_the_same(
    tmp_path: Path, cold_list: tuple[Path, str]
) -> None:
    cold = _warm(tmp_path, cold_list)
    warm, modules = _probe(tmp_path, "list")
    assert warm == cold
    assert _heavy(modules) == []
    for costly in ("click", "importlib.metadata", "importlib.resources", "shutil"):
        assert costly not in modules  # plug-ins from their cache, plain output
    for suite in ("core", "security", "oracle", "bank: add_payee"):
        assert suite in warm


def test_list_reloads_when_the_registry_cache_lies(
    tmp_path: Path, cold_list: tuple[Path, str]
) -> None:
    cold = _warm(tmp_path, cold_list)
    cache = tmp_path / "cache" / "toolproof" / "registries.json"
    data = json.loads(cache.read_text())
    data["agents"] = ["evil"]
    data["fingerprint"] = "0" * 64  # not of this code: must not be believed
    cache.write_text(json.dumps(data))
    again, modules = _probe(tmp_path, "list")
    assert again == cold and "evil" not in again
    assert "toolproof.agents" in modules


@pytest.mark.parametrize(
    "content",
    [
        "garbage",
        json.dumps({"fingerprint": "f", "agents": "oracle", "toolkits": {}}),
        json.dumps({"fingerprint": "f", "agents": [1], "toolkits": {}}),
        json.dumps({"fingerprint": "f", "agents": [], "toolkits": {"k": "t"}}),
        json.dumps({"fingerprint": "f", "agents": [], "toolkits": []}),
        json.dumps(["f"]),
    ],
)
def test_a_malformed_registry_cache_is_refused(tmp_path: Path, content: str) -> None:
    cache = tmp_path / "registries.json"
    cache.write_text(content)
    assert _read(cache, "f") is None
    assert _read(tmp_path / "missing.json", "f") is None


def test_loaded_registries_win_over_the_cache(tmp_path: Path) -> None:
    from toolproof.agents import agent_kinds

    cache = tmp_path / "registries.json"
    cache.write_text(json.dumps({"fingerprint": "x", "agents": ["evil"], "toolkits": {}}))
    kinds, kits = registries(cache)  # the registries are loaded in this process
    assert kinds == agent_kinds() and "files" in kits


def test_index_location_follows_xdg_and_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert common.suite_index_file() == tmp_path / "toolproof" / "suite-index.json"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert common.suite_index_file() == tmp_path / "home" / ".cache/toolproof/suite-index.json"
    monkeypatch.setenv("TOOLPROOF_NO_INDEX", "1")
    assert common.suite_index_file() is None


def test_errors_are_recognised_without_importing_the_spec_package() -> None:
    assert _is_toolproof_error(SpecError([]))
    assert not _is_toolproof_error(ValueError("x"))
    from toolproof.cli import _EXIT_INTERRUPTED, _EXIT_USAGE

    assert (_EXIT_USAGE, _EXIT_INTERRUPTED) == (common.EXIT_USAGE, common.EXIT_INTERRUPTED)


@pytest.mark.parametrize("columns", ["80", "200", None])
def test_the_quick_help_is_exactly_what_click_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], columns: str | None
) -> None:
    from toolproof.cli import _quick_help, cli, main

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: click's 80 columns
    else:
        monkeypatch.setenv("COLUMNS", columns)
    quick = _quick_help()
    assert quick is not None and main(["--help"]) == 0 and capsys.readouterr().out == quick
    with pytest.raises(SystemExit):
        cli.main(["--help"], prog_name="toolproof")
    assert quick == capsys.readouterr().out


def test_a_narrow_terminal_gets_clicks_wrapping(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolproof.cli import _quick_help, main

    monkeypatch.setenv("COLUMNS", "50")
    assert _quick_help() is None
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "Commands:" in out and max(map(len, out.splitlines())) <= 50


def test_help_imports_not_even_click(tmp_path: Path) -> None:
    out, modules = _probe(tmp_path, "--help")
    assert out.startswith("Usage: toolproof") and "click" not in modules
    _, modules = _probe(tmp_path, "list", "--help")  # any other command: click, as ever
    assert "click" in modules and _heavy(modules) == []


def test_a_run_with_no_model_imports_no_model_proxy_or_adapter_code(tmp_path: Path) -> None:
    # The oracle on one records-world task: neither the model gateway's server, nor httpx,
    # nor the live track's proxy, nor any agent module but the oracle's is imported.
    from toolproof.agents.builtin import KINDS

    _, modules = _probe(
        tmp_path, "run", "core", "--agent", "oracle", "--task", "stock-sum", "--quiet",
        "--out", str(tmp_path / "run"),
    )  # fmt: skip
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["episodes"]["scored"] == summary["success"]["successes"] == 1, summary["success"]
    for costly in ("httpx", "starlette", "uvicorn", "toolproof.gateway._server", "toolproof.live"):
        assert costly not in modules
    agents = {m for m in modules if m.rpartition(".")[2] in set(KINDS.values())}
    assert agents == {"toolproof.agents.builtin.oracle"}
