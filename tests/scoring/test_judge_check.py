"""The LLM judge check, end to end through the OpenAI SDK against the scripted model server."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord, RunReader
from toolproof.scoring.checks.judge import judge_options, parse_reply
from toolproof.spec.checks import JudgeCheck
from toolproof.testing import ModelServer, ScriptedReply

SUITE = {
    "name": "judged",
    "version": "1.0.0",
    "seed": 3,
    "canary": "judged canary: not for training",
}


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep a developer's OpenAI settings from redirecting or authorising the judge."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield


def _suite(root: Path, judge: dict[str, Any]) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text(yaml.safe_dump(SUITE))
    task = {
        "id": "explain-sum",
        "description": "Add 2 and 3 with the calculator and explain the result in one sentence.",
        "type": "single_tool",
        "tools": ["calculate"],
        "success": [
            {"kind": "output", "number": 5},
            {"kind": "judge", "name": "clarity", "model": "openai:judge-model", **judge},
        ],
        "solution": {
            "calls": [{"tool": "calculate", "args": {"expression": "2 + 3"}}],
            "answer": "2 + 3 = 5: adding three to two gives five.",
        },
    }
    (root / "tasks" / "explain-sum.yaml").write_text(yaml.safe_dump(task))
    return root


def _run(tmp_path: Path, judge: dict[str, Any]) -> tuple[EpisodeRecord, dict[str, Any]]:
    suite = _suite(tmp_path / "suite", judge)
    config = RunConfig(suite=str(suite), agent="oracle", snapshots=False, retries=0)
    with judge_options(api_key="test-key", max_retries=0):
        asyncio.run(Runner(config, tmp_path / "run", parallel=1).run())
    with RunReader(tmp_path / "run") as reader:
        (record,) = list(reader.records())
        summary = reader.summary()
    assert summary is not None
    return record, summary


def _replies(*texts: str) -> list[ScriptedReply]:
    return [ScriptedReply(text, usage=(100, 10)) for text in texts]


def test_judge_samples_spread_prompt_and_cost(tmp_path: Path) -> None:
    replies = _replies(
        '{"score": 4, "reason": "clear"}', '{"score": 5, "reason": "very clear"}', "Score: 3"
    )
    with ModelServer(replies) as server:
        rubric = "States the sum and explains it briefly."
        judge = {
            "rubric": rubric,
            "scale": [1, 5],
            "pass_threshold": 4,
            "samples": 3,
            "base_url": server.base_url,
            "reference": True,
        }
        record, summary = _run(tmp_path, judge)
        requests = server.chat_requests
    check = next(c for c in record.score.checks if c.kind == "judge")
    assert check.passed and record.score.passed
    assert record.score.judged and record.task.judged
    data = check.data
    assert data["model"] == "openai:judge-model" and data["base_url"] == server.base_url
    assert data["samples_requested"] == 3 and len(data["samples"]) == 3
    assert [s["score"] for s in data["samples"]] == [4, 5, 3]
    assert (data["mean"], data["min"], data["max"], data["stdev"]) == (4.0, 3, 5, 1.0)
    assert check.score == pytest.approx(0.75)  # (4 - 1) / (5 - 1)
    assert data["usage"] == {"input_tokens": 300, "output_tokens": 30, "cost_usd": None}
    prompt = data["prompt"][1]["content"]
    assert (
        rubric in prompt
        and "adding three to two gives five" in prompt
        and "Reference answer" in prompt
    )
    # what the server saw: three requests for the model named after "openai:"
    assert [r.model for r in requests] == ["judge-model"] * 3
    assert all(r.temperature == 0.0 and rubric in (r.last_user_text or "") for r in requests)
    assert len({r.seed for r in requests}) == 3
    # judge spend is apart from the agent's, and the judged task is reported apart
    assert summary["tokens"]["total"] == 0
    assert summary["judge"]["tokens"] == {"input": 300, "output": 30}
    assert (
        summary["judge"]["cost"]["status"] == "unpriced" and summary["judge"]["cost"]["usd"] is None
    )
    assert set(summary["breakdown"]["scoring"]) == {"judged"}


def test_a_low_mean_fails_and_a_price_gives_judge_cost(tmp_path: Path) -> None:
    replies = _replies(
        '{"verdict": "fail", "reason": "vague"}', '{"verdict": "pass"}', "FAIL: no explanation"
    )
    with ModelServer(replies) as server:
        judge = {
            "rubric": "Explains why.",
            "scale": "pass/fail",
            "samples": 3,
            "base_url": server.base_url,
            "price": [1.0, 2.0],
        }
        record, summary = _run(tmp_path, judge)
    check = next(c for c in record.score.checks if c.kind == "judge")
    assert not check.passed and not record.score.passed
    assert check.data["mean"] == pytest.approx(1 / 3) and check.data["pass_threshold"] == 0.5
    assert record.score.failure_mode == "wrong_answer"
    assert check.data["usage"]["cost_usd"] == pytest.approx((300 * 1.0 + 30 * 2.0) / 1e6)
    assert summary["judge"]["cost"]["status"] == "priced"
    assert summary["judge"]["cost"]["usd"] == pytest.approx(0.00036)
    assert summary["success"]["n"] == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_or_unusable_judge_is_an_infra_error(tmp_path: Path) -> None:
    judge = {
        "rubric": "Anything.",
        "base_url": f"http://127.0.0.1:{_closed_port()}/v1",
        "timeout_s": 5,
    }
    record, summary = _run(tmp_path / "down", judge)
    check = next(c for c in record.score.checks if c.kind == "judge")
    assert check.data["infra_error"] is True and "APIConnectionError" in check.data["error"]
    assert record.score.termination == "infra_error" and record.infra_error
    assert summary["episodes"]["infra_errors"] == 1 and summary["success"]["n"] == 0
    with ModelServer(_replies("I would rather not say.")) as server:
        record, _ = _run(tmp_path / "garbage", {"rubric": "Anything.", "base_url": server.base_url})
    check = next(c for c in record.score.checks if c.kind == "judge")
    assert check.data["infra_error"] and "no sample gave a usable score" in check.detail
    assert record.score.failure_mode is None


def test_judge_options_override_the_checks_base_url(tmp_path: Path) -> None:
    with ModelServer(_replies('{"score": 5}')) as server:
        judge = {"rubric": "Anything.", "base_url": "http://127.0.0.1:9/v1"}
        suite = _suite(tmp_path / "suite", judge)
        config = RunConfig(suite=str(suite), agent="oracle", snapshots=False, retries=0)
        with judge_options(api_key="k", base_url=server.base_url):
            summary = asyncio.run(Runner(config, tmp_path / "run", parallel=1).run())
        assert server.calls == 1
    assert summary["success"]["successes"] == 1


def _spec(**fields: Any) -> JudgeCheck:
    return JudgeCheck.model_validate(
        {"kind": "judge", "rubric": "r", "model": "openai:m", **fields}
    )


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"score": 4, "reason": "ok"}', 4.0),
        ('Sure! {"score": 2}', 2.0),
        ("Score: 5/5", 5.0),
        ('{"score": 9}', None),
        ("no number here", None),
    ],
)
def test_parse_reply_on_a_scale(text: str, score: float | None) -> None:
    assert parse_reply(_spec(scale=[1, 5]), text)[0] == score


def test_parse_reply_pass_fail_and_spec_validation() -> None:
    spec = _spec(scale="pass_fail")
    assert parse_reply(spec, json.dumps({"verdict": "PASS", "reason": "fine"})) == (1.0, "fine")
    assert parse_reply(spec, "Verdict: fail.")[0] == 0.0
    assert parse_reply(spec, "maybe")[0] is None
    with pytest.raises(ValueError, match="outside the scale"):
        _spec(scale=[1, 5], pass_threshold=7)
    with pytest.raises(ValueError, match="openai:"):
        JudgeCheck.model_validate({"kind": "judge", "rubric": "r", "model": "gpt-4o"})
