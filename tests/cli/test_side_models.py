"""``toolproof run --user-model / --judge-model``: the options, the fallback note, bad values."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from toolproof.testing import ModelServer, ScriptedReply
from toolproof_helpers import CliResult

Invoke = Callable[..., CliResult]

TASK = {
    "id": "amb-pay",
    "description": "Say which account the user wants to pay from.",
    "type": "single_tool",
    "tools": ["ask_user"],
    "user": {
        "simulator": "model",
        "facts": {"account": {"value": "CHK-2", "about": "the account to pay from"}},
        "topics": [{"keywords": ["account"], "reply": "CHK-2."}],
    },
    "success": [{"kind": "output", "contains": ["CHK-2"]}],
    "solution": {
        "calls": [{"tool": "ask_user", "args": {"question": "Which account?"}}],
        "answer": "CHK-2",
    },
}


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "suite"
    (root / "tasks").mkdir(parents=True)
    meta = {"name": "asked", "version": "1.0.0", "seed": 1, "canary": "asked canary: no training"}
    (root / "suite.yaml").write_text(yaml.safe_dump(meta))
    (root / "tasks" / "amb-pay.yaml").write_text(yaml.safe_dump(TASK))
    return root


def test_user_model_from_the_cli_with_cache_and_no_key_on_disk(
    invoke: Invoke, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    with ModelServer([ScriptedReply("CHK-2, please.", usage=(40, 4))]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-user-model-secret")
        for name in ("one", "two"):
            result = invoke(
                "run", suite, "-a", "oracle", "--user-model", "openai:sim", "--cache", cache,
                "-o", tmp_path / name,
            )  # fmt: skip
            assert result.code == 0, result.err
            assert "no --user-model" not in result.err
        assert server.calls == 1  # the second run was answered from the cache
    # the console says what the user model spent, apart from the agent
    assert "apart from the agent: user model openai:sim: 1 calls (1 cached), 40+4 tokens" in (
        result.out + result.err
    )
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["success"]["rate"] == 1.0
    assert summary["user_model"]["calls"] == summary["user_model"]["cached_calls"] == 1
    assert summary["config"]["user_model"] == "openai:sim"
    # a resume under another user model is refused, naming it
    resumed = invoke("run", "--resume", tmp_path / "one", "--user-model", "openai:other", "-q")
    assert resumed.code == 2 and "Traceback" not in resumed.err
    assert "user_model: the run used 'openai:sim', now 'openai:other'" in resumed.err
    for name in ("one", "two"):
        for file in (tmp_path / name).iterdir():
            if file.is_file():
                assert b"sk-user-model-secret" not in file.read_bytes(), file


def test_without_user_model_the_run_says_once_that_the_scripted_user_plays(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    result = invoke("run", suite, "-a", "oracle", "-o", tmp_path / "run")
    assert result.code == 0, result.err
    assert result.err.count("no --user-model was given: the scripted user plays them") == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--user-model", "gpt-4o"), "--user-model 'gpt-4o': give PROVIDER:MODEL"),
        (("--judge-model", "anthropic:claude-haiku-4-5"), "the judge calls the OpenAI protocol"),
        (("--judge-model", "openai:bad name"), "empty or has spaces"),
    ],
)
def test_bad_side_models_are_refused_with_the_option_named(
    invoke: Invoke, suite: Path, tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    result = invoke("run", suite, "-a", "oracle", *args, "-o", tmp_path / "run")
    assert result.code == 2
    assert expected in result.err and "Traceback" not in result.err
    assert not (tmp_path / "run").exists()
