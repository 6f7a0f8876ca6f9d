"""``toolproof run --model``: one agent, two models, no code change; compare pairs the runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof_helpers import STOCK_SUM_PRICED as STOCK_SUM
from toolproof_helpers import CliResult

pytest.importorskip("langchain_openai", reason="needs pip install 'toolproof[langchain]'")

from toolproof.testing import ModelServer, sequence_policy

Invoke = Callable[..., CliResult]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENT = "langchain:langgraph_agent:make_agent"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")


def test_one_agent_on_two_models_and_compare_pairs_them(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = {}
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for model in ("gpt-4o-mini", "gpt-4o"):
            out = tmp_path / model
            result = invoke(
                "run", "core", "-a", AGENT, "--model", f"openai:{model}", "-t", "stock-sum",
                "-o", out, "-q",
            )  # fmt: skip
            assert result.code == 0, result.err
            runs[model] = json.loads((out / "summary.json").read_text())
        asked = [request["model"] for request in server.requests]
    assert asked == ["gpt-4o-mini"] * 3 + ["gpt-4o"] * 3
    mini, big = runs["gpt-4o-mini"], runs["gpt-4o"]
    assert (mini["agent"], mini["model"]) == (AGENT, "openai:gpt-4o-mini")
    assert (big["agent"], big["model"]) == (AGENT, "openai:gpt-4o")
    # stock-sum's answer is typed; the scripted model answers in text: pass@loose
    assert mini["pass_loose"]["rate"] == big["pass_loose"]["rate"] == 1.0
    assert "sk-from-the-environment" not in (tmp_path / "gpt-4o" / "summary.json").read_text()
    compared = invoke("compare", tmp_path / "gpt-4o-mini", tmp_path / "gpt-4o")
    assert compared.code == 0, compared.err
    assert "differ in only the model: A openai:gpt-4o-mini, B openai:gpt-4o" in compared.out
    assert "1 paired task instances" in compared.out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-a", AGENT, "--model", "gpt-4o"], "give PROVIDER:MODEL"),
        (["-a", AGENT, "--model", "openai-compatible:qwen"], "names its server"),
        (["-a", "oracle", "--model", "openai:gpt-4o"], "takes no model"),
        (["-a", "openai:gpt-4o", "--model", "openai:gpt-4o"], "names its model in the spec"),
    ],
)
def test_a_bad_model_is_a_message_and_exit_2(
    invoke: Invoke, tmp_path: Path, args: list[str], said: str
) -> None:
    result = invoke("run", "core", *args, "-t", "stock-sum", "-o", tmp_path / "run", "-q")
    assert result.code == 2
    assert said in result.err
    assert "Traceback" not in result.err
