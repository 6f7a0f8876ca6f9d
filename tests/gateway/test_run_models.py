"""A whole episode and ``toolproof run``: the run's model is the only one served, by default.

A command-line agent (on the host, as ``--sandbox process`` runs it) asks the gateway, with
the real OpenAI SDK, for a model other than the run's. Without ``allow_other_models`` it is
refused (the agent's error: the episode is scored, never ``infra_error``) and the provider
is never called; with it the call goes through, recorded under the model it named. The
command line's ``--allow-other-models`` lands in the run's agent options, and is refused
for an agent that does not call its model through the gateway.
"""

from __future__ import annotations

import functools
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")
pytest.importorskip("openai")

from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import Suite, load_suite, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedReply
from toolproof.trajectory import Termination
from toolproof_helpers import CliResult

ASKS_ANOTHER_MODEL = """
import os, sys
import openai
client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and the key: the gateway's
try:
    reply = client.chat.completions.create(
        model="gpt-5-pro", messages=[{"role": "user", "content": "hi"}])
except openai.BadRequestError as exc:
    print(f"refused: {exc.code}")
    sys.exit(0)
print(f"answered: {reply.choices[0].message.content}")
"""


@functools.cache
def core() -> Suite:
    return load_suite(str(resolve_suite_path("core")))


async def run_cmd(script: Path, options: dict[str, Any]) -> EpisodeRecord:
    agent = f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    config = RunConfig(
        suite=str(core().root),
        agent=agent,
        agent_options={"sandbox": "process", **options},
        tasks=["hello-file"],
    )
    return await Worker(config, None, core()).run(EpisodeJob("hello-file", 0))


@pytest.mark.parametrize("allowed", [False, True])
async def test_a_cmd_agent_asking_for_another_model(tmp_path: Path, allowed: bool) -> None:
    script = tmp_path / "agent.py"
    script.write_text(ASKS_ANOTHER_MODEL)
    with ModelServer([ScriptedReply("from the other model", usage=(4, 2))]) as server:
        options = {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "base_url": server.base_url,
            "api_key": "sk-run",
        }
        if allowed:
            options["allow_other_models"] = True
        record = await run_cmd(script, options)
        asked = [request["model"] for request in server.requests]
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert trajectory.termination is not Termination.INFRA_ERROR
    calls = [call for step in trajectory.steps for call in step.annotations.get("model_calls", [])]
    if allowed:
        assert trajectory.final_answer == "answered: from the other model"
        assert asked == ["gpt-5-pro"]
        assert [(c["model"], c["status"]) for c in calls] == [("gpt-5-pro", 200)]
    else:
        assert trajectory.final_answer == "refused: model_not_allowed"
        assert asked == []  # the run's key paid for nothing
        assert [(c["model"], c["status"]) for c in calls] == [("gpt-5-pro", 400)]
    assert record.score is not None and not record.score.passed  # scored, as a failure


Invoke = Callable[..., CliResult]


def test_the_option_is_refused_for_an_agent_without_the_gateway(
    invoke: Invoke, tmp_path: Path
) -> None:
    result = invoke(
        "run", "core", "-a", "oracle", "--allow-other-models", "-t", "hello-file",
        "-o", tmp_path / "run", "-q",
    )  # fmt: skip
    assert result.code == 2
    assert "--allow-other-models" in result.err and "model gateway" in result.err
    assert not (tmp_path / "run").exists()


def test_the_option_is_kept_in_the_runs_agent_options(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_openai", reason="needs pip install 'toolproof[langchain]'")
    from toolproof.results import RunReader
    from toolproof.testing import sequence_policy
    from toolproof_helpers import STOCK_SUM_PRICED

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples"))
    with ModelServer(sequence_policy(STOCK_SUM_PRICED)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
        result = invoke(
            "run", "core", "-a", "langchain:langgraph_agent:make_agent",
            "--model", "openai:gpt-4o-mini", "--allow-other-models", "-t", "stock-sum",
            "-o", tmp_path / "run", "-q",
        )  # fmt: skip
    assert result.code == 0, result.err
    with RunReader(tmp_path / "run") as reader:
        config = reader.meta()["config"]
    assert config["agent_options"]["allow_other_models"] is True
    assert config["model"] == "openai:gpt-4o-mini"


def test_the_route_holds_the_runs_model_and_the_option() -> None:
    from toolproof.agents.adapters._via_gateway import gateway_plan
    from toolproof.spec import SpecError

    held = gateway_plan({"model": "gpt-4o-mini"}, "agent").route
    assert (held.model, held.allow_other_models) == ("gpt-4o-mini", False)
    assert held.refusal("gpt-4o-mini") is None
    assert "allows only 'gpt-4o-mini'" in (held.refusal("gpt-4o") or "")
    free = gateway_plan({"model": "gpt-4o-mini", "allow_other_models": True}, "agent").route
    assert free.refusal("gpt-4o") is None
    assert gateway_plan({}, "agent").route.refusal("anything") is None  # the run named none
    with pytest.raises(SpecError, match="allow_other_models"):
        gateway_plan({"allow_other_models": "yes"}, "agent")


CRASHES_ON_REFUSAL = """
import openai
client = openai.OpenAI(max_retries=0)
client.chat.completions.create(model="gpt-5-pro", messages=[{"role": "user", "content": "hi"}])
"""


async def test_an_agent_that_crashes_on_the_refusal_is_an_agent_error(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(CRASHES_ON_REFUSAL)
    with ModelServer([ScriptedReply("never")]) as server:
        options = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url}
        record = await run_cmd(script, {**options, "api_key": "sk-run"})
        assert server.calls == 0
    assert record.trajectory.termination is Termination.AGENT_ERROR, record.trajectory.error
    assert record.score is not None and not record.score.passed
