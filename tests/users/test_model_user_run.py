"""``simulator: model`` end to end: a run whose user is played by a scripted model server
through the model gateway, recorded apart from the agent, cached by ``--cache``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolproof import gateway
from toolproof.engine import RunConfig
from toolproof.results import EpisodeRecord
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply
from toolproof.trajectory import Termination
from toolproof_helpers import run_single

SUITE = {"name": "asked", "version": "1.0.0", "seed": 5, "canary": "asked canary: no training"}

TASK: dict[str, Any] = {
    "id": "amb-pay",
    "description": "Say which account the user wants to pay the bill from.",
    "type": "single_tool",
    "tools": ["ask_user"],
    "user": {
        "simulator": "model",
        "persona": "A busy shop owner.",
        "goal": "The bill is paid from the right account.",
        "facts": {"account": {"value": "CHK-2", "about": "the account to pay from"}},
        "topics": [{"keywords": ["account"], "reply": "CHK-2 (scripted)."}],
    },
    "success": [{"kind": "output", "contains": ["CHK-2"]}],
    "solution": {
        "calls": [{"tool": "ask_user", "args": {"question": "Which account should I use?"}}],
        "answer": "CHK-2",
    },
}


@pytest.fixture(autouse=True)
def _own_gateway() -> Iterator[None]:
    yield
    gateway.stop_shared()


def _suite(root: Path) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text(yaml.safe_dump(SUITE))
    (root / "tasks" / "amb-pay.yaml").write_text(yaml.safe_dump(TASK))
    return root


def _config(suite: Path, base_url: str | None, cache: Path | None = None) -> RunConfig:
    side: dict[str, dict[str, Any]] = {}
    if base_url is not None:
        side["user"] = {"provider": "openai", "model": "sim", "base_url": base_url}
        side["user"].update(api_key="test-key", prices=None)
        if cache is not None:
            side["user"]["cache"] = str(cache)
    return RunConfig(
        suite=str(suite),
        agent="oracle",
        snapshots=False,
        retries=0,
        user_model="openai:sim" if base_url is not None else None,
        side_models=side,
    )


def _run(config: RunConfig, run_dir: Path) -> tuple[EpisodeRecord, dict[str, Any]]:
    record, summary = run_single(config, run_dir)
    return record, summary


def _answer(record: EpisodeRecord) -> dict[str, Any]:
    loaded = json.loads(record.trajectory.steps[0].results[0].content)
    assert isinstance(loaded, dict)
    return loaded


def test_a_model_plays_the_user_recorded_apart_and_a_cached_rerun_is_free(
    tmp_path: Path,
) -> None:
    suite = _suite(tmp_path / "suite")
    cache = tmp_path / "cache"
    with ModelServer([ScriptedReply("From CHK-2, please.", usage=(50, 6))]) as server:
        first, summary = _run(_config(suite, server.base_url, cache), tmp_path / "run1")
        assert server.calls == 1
        second, again = _run(_config(suite, server.base_url, cache), tmp_path / "run2")
        assert server.calls == 1  # the rerun made no upstream call
        (request,) = server.chat_requests
    assert first.score.passed and first.trajectory.termination is Termination.COMPLETED
    assert _answer(first) == {"reply": "From CHK-2, please.", "answered_by": "model:openai:sim"}
    assert request.messages[-1].content == "Which account should I use?"
    assert request.messages[-1].role == "user" and "CHK-2" in (request.messages[0].content or "")
    # the user's call is noted apart from the agent's model calls
    notes = first.trajectory.steps[0].annotations
    assert "model_calls" not in notes
    (call,) = notes["user_model_calls"]
    assert call["model"] == "sim" and call["cached"] is False
    assert call["usage"]["input_tokens"] == 50 and call["usage"]["output_tokens"] == 6
    # its tokens are reported apart: the agent (oracle) spent none
    assert summary["tokens"]["total"] == 0
    assert summary["user_model"]["model"] == "openai:sim"
    assert summary["user_model"]["calls"] == 1 and summary["user_model"]["cached_calls"] == 0
    assert (summary["user_model"]["input_tokens"], summary["user_model"]["output_tokens"]) == (
        50,
        6,
    )
    # the cached rerun is identical
    assert _answer(second) == _answer(first)
    assert second.score.model_dump() == first.score.model_dump()
    assert second.trajectory.steps[0].annotations["user_model_calls"][0]["cached"] is True
    assert again["user_model"]["cached_calls"] == 1


def test_without_a_user_model_the_scripted_user_plays(tmp_path: Path) -> None:
    record, summary = _run(_config(_suite(tmp_path / "suite"), None), tmp_path / "run")
    assert _answer(record) == {"reply": "CHK-2 (scripted).", "answered_by": "scripted"}
    assert "user_model" not in summary


def test_a_failing_user_model_is_an_infra_error_not_the_agents(tmp_path: Path) -> None:
    with ModelServer([ScriptedReply(error=ScriptedError(status=401, times=5))]) as server:
        record, summary = _run(_config(_suite(tmp_path / "suite"), server.base_url), tmp_path / "r")
    assert record.trajectory.termination is Termination.INFRA_ERROR
    assert "user model" in (record.trajectory.error or "")
    assert summary["episodes"]["infra_errors"] == 1
