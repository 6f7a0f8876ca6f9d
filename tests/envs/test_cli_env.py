"""``toolproof env check``, ``toolproof env setup`` and the refusal of ``toolproof run``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolproof.envs import check_suite, setup_hint
from toolproof.spec import load_suite
from toolproof_helpers import CliResult, write_suite

from .envkit import fake_env, write_lock

TASK: dict[str, Any] = {
    "id": "fix",
    "description": "Fix the lint errors.",
    "type": "multi_step",
    "tools": ["run_command"],
    "world": {"files": {"a.py": "import os\n"}},
    "sandbox": {"toolenv": "../envs/py/env.lock.json"},
    "success": [{"kind": "lint", "linter": "ruff"}],
    "solution": {"answer": "{}"},
}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A one-task suite pinning a (fake) ruff environment."""
    root = write_suite(tmp_path / "suite", [TASK])
    write_lock(root / "envs" / "py", baseline={"fix": 1})
    return root


def test_check_says_ready_missing_or_drift(
    suite: Path, tmp_path: Path, invoke: Callable[..., CliResult]
) -> None:
    cache = tmp_path / "cache"
    missing = invoke("env", "check", suite, "--env-cache", cache)
    assert missing.code == 1 and f"not set up; run `toolproof env setup {suite}`" in missing.out
    fake_env(cache, suite / "envs" / "py" / "env.lock.json")
    ready = invoke("env", "check", suite, "--env-cache", cache)
    assert ready.code == 0 and "tools (1 tasks): ready, digest sha256:" in ready.out
    lock_path = suite / "envs" / "py" / "env.lock.json"
    data = json.loads(lock_path.read_text())
    data["pip"]["ruff"] = "0.7.0"
    lock_path.write_text(json.dumps(data))
    drift = invoke("env", "check", suite, "--env-cache", cache)
    assert drift.code == 1 and "DRIFT" in drift.out and "ruff 0.7.0 → 0.6.9" in drift.out


def test_run_refuses_a_suite_whose_environment_is_missing(
    suite: Path, tmp_path: Path, invoke: Callable[..., CliResult]
) -> None:
    result = invoke(
        "run", suite, "--agent", "noop", "-q", "--out", tmp_path / "run",
        "--env-cache", tmp_path / "empty",
    )  # fmt: skip
    assert result.code == 2
    assert "not set up in the cache; run `toolproof env setup" in result.err
    assert not (tmp_path / "run" / "summary.json").exists()


def test_run_warns_but_goes_on_with_allow_drift(suite: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fake_env(cache, suite / "envs" / "py" / "env.lock.json", versions={"ruff": "0.7.0"})
    said: list[str] = []
    check_suite(load_suite(suite), cache_root=cache, allow_drift=True, warn=said.append)
    assert said and "ruff 0.6.9 → 0.7.0" in said[0]


def test_the_set_up_hint_names_built_in_suites_by_name(suite: Path) -> None:
    assert setup_hint(load_suite("lint")) == "toolproof env setup lint"
    assert setup_hint(load_suite(suite)) == f"toolproof env setup {suite}"


def test_setup_of_a_suite_without_environments_does_nothing(
    tmp_path: Path, invoke: Callable[..., CliResult]
) -> None:
    plain = dict(TASK, id="plain", sandbox=None, success=[{"kind": "output", "contains": ["x"]}])
    root = write_suite(tmp_path / "plain", [{k: v for k, v in plain.items() if v is not None}])
    result = invoke("env", "setup", root, "--env-cache", tmp_path / "cache")
    assert result.code == 0 and "pins no tool environment" in result.out
