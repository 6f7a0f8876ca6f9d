"""``toolproof run`` with a provider agent: environment, ``--cache``, and no key on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from adapter_support import FAST, STOCK_SUM, mini_core
from click.testing import CliRunner

from toolproof.cli import cli
from toolproof.results import RunReader
from toolproof.testing import ModelServer

KEY = "sk-test-0123456789abcdef"


def test_run_reads_the_environment_caches_and_never_writes_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = mini_core(tmp_path / "suite", ["stock-sum"])
    cache = tmp_path / "cache"
    runner = CliRunner()
    with ModelServer(STOCK_SUM) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        args = ["run", str(suite), "--agent", "openai:gpt-4o", "--cache", str(cache), "-q"]
        args += [f"--agent-arg={k}={v}" for k, v in FAST.items()]
        first = runner.invoke(cli, [*args, "--out", str(tmp_path / "one")])
        assert first.exit_code == 0, first.output
        assert server.calls == 3
        second = runner.invoke(cli, [*args, "--out", str(tmp_path / "two")])
        assert second.exit_code == 0, second.output
        assert server.calls == 3  # replayed from the cache
        resumed = runner.invoke(cli, ["run", "--resume", str(tmp_path / "one"), "-q"])
        assert resumed.exit_code == 0, resumed.output
    with RunReader(tmp_path / "one") as reader:
        options = reader.meta()["config"]["agent_options"]
        assert all(r.score.passed_loose for r in reader.records())
    assert options["base_url"] == server.base_url
    assert options["cache"] == str(cache.resolve())
    assert options["api_key"] == "<redacted>"
    for path in [*tmp_path.rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_resumed_run_without_the_key_says_how_to_give_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = mini_core(tmp_path / "suite", ["stock-sum"])
    runner = CliRunner()
    with ModelServer(STOCK_SUM) as server:
        args = ["run", str(suite), "--agent", "openai:gpt-4o", "-q", "--out", str(tmp_path / "r")]
        args += ["--agent-arg", f"base_url={server.base_url}", "--agent-arg", f"api_key={KEY}"]
        assert runner.invoke(cli, args).exit_code == 0
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    resumed = runner.invoke(cli, ["run", "--resume", str(tmp_path / "r"), "-q"])
    assert resumed.exit_code != 0
    assert "API key is not recorded" in str(resumed.exception)
