"""The run gate and exit codes: a run that measured nothing, or too little, exits 3."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import toolproof_test_agents  # noqa: F401  (registers the test-flaky kind)

from toolproof_helpers import CliResult, make_task

Invoke = Callable[..., CliResult]
FLAKY = ["--agent", "test-flaky", "--retries", "0", "-q"]  # a keyed test kind (plays the key)
"""``infra*`` tasks fail as infrastructure ("HTTP 503 from the provider"), ``crash*`` as the
agent's error, the rest pass."""


def _suite(suite_dir: Callable[..., Path], infra: int, ok: int, crash: int = 0) -> Path:
    tasks = [make_task(id=f"infra-{i}") for i in range(infra)]
    tasks += [make_task(id=f"ok-{i}") for i in range(ok)]
    tasks += [make_task(id=f"crash-{i}") for i in range(crash)]
    return suite_dir(tasks)


def test_an_all_infra_error_run_exits_3_naming_the_cause(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    result = invoke("run", _suite(suite_dir, 3, 0), *FLAKY, "-o", tmp_path / "r")
    assert result.code == 3
    assert "no scored episodes: 3 of 3 finished episodes were infra errors" in result.err
    assert "HTTP 503 from the provider" in result.err  # the first infra error's text
    assert "Traceback" not in result.err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["episodes"]["complete"] is True  # complete, yet it measured nothing


def test_agent_errors_are_scored_not_gated(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    result = invoke("run", _suite(suite_dir, 0, 0, crash=2), *FLAKY, "-o", tmp_path / "r")
    assert result.code == 0, result.err  # the agent's own failures are results


@pytest.mark.parametrize(
    ("limit", "code"),
    [(None, 0), ("0.05", 0), ("0.04", 3), ("0", 3), ("1", 0)],
)
def test_the_infra_error_share_is_gated(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path, limit: str | None, code: int
) -> None:
    root = _suite(suite_dir, 1, 19)  # 1 of 20 = 5%: at the default limit, not over it
    extra = [] if limit is None else ["--max-infra-errors", limit]
    result = invoke("run", root, *FLAKY, *extra, "-o", tmp_path / "r")
    assert result.code == code, result.err
    if code:
        assert "too many infra errors: 1 of 20 episodes (5.0%) exceed the limit" in result.err
        assert "HTTP 503" in result.err


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "lots"])
def test_a_bad_infra_limit_is_a_usage_error(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path, value: str
) -> None:
    result = invoke(
        "run", _suite(suite_dir, 0, 1), *FLAKY, "--max-infra-errors", value, "-o", tmp_path / "r"
    )
    assert result.code == 2
    assert "--max-infra-errors" in result.err and "Traceback" not in result.err


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["nope"], 2),  # an unknown command
        (["run", "core"], 2),  # no --agent
        (["run", "no-such-suite", "--agent", "oracle"], 2),
        (["show", "."], 2),  # not a run folder
        (["report", "."], 2),
        (["replay", ".", "t", "-s", "0", "-a", "oracle"], 2),
        (["view", "no-such-folder"], 2),
        (["list", "--suite", "no-such-suite"], 2),
        (["validate", "no-such-path"], 2),
        (["env", "check", "no-such-suite"], 2),
        (["schema"], 0),
        (["list"], 0),
    ],
)
def test_every_command_follows_the_exit_code_table(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.code == code, result.out + result.err
    assert "Traceback" not in result.err
