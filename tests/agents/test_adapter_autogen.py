"""``autogen:module:factory``: the AutoGen example, driven by the scripted model server.

The example's own ``OpenAIChatCompletionClient`` talks to the server over real
HTTP; the task's tools reach its ``AssistantAgent`` as AutoGen tools, and every
call must show up in the trajectory as a recorded, gateway-checked step.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat", reason="needs pip install 'toolproof[autogen]'")
pytest.importorskip("autogen_ext.models.openai", reason="needs pip install 'toolproof[autogen]'")

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters import _tools_bridge
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import SpecError, Suite, load_suite, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall, sequence_policy
from toolproof.tools import resolve_tools
from toolproof.trajectory import Termination
from toolproof_helpers import STOCK_SUM_PRICED as STOCK_SUM

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENT = "autogen:autogen_agent:make_agent"
# A dated name: AutoGen resolves "gpt-4o-mini" to it and warns when the reply's model differs.
MODEL = "gpt-4o-mini-2024-07-18"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def options(server: ModelServer) -> dict[str, Any]:
    return {"base_url": server.base_url, "api_key": "test", "model": MODEL}


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(agent: str, options: dict[str, Any], task: str = "stock-sum") -> EpisodeRecord:
    """Run one episode of a core task, as `toolproof run` would."""
    config = RunConfig(suite=str(core().root), agent=agent, agent_options=options, tasks=[task])
    return await Worker(config, None, core()).run(EpisodeJob(task, 0))


async def test_autogen_example_completes_stock_sum() -> None:
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        record = await run_task(AGENT, options(server))
        offered = {tool.name: tool.parameters for tool in server.chat_requests[0].tools}
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed_loose
    assert trajectory.final_answer == "Products A and B have 42 units in stock together."
    assert [(c.name, c.arguments) for c, _ in trajectory.tool_calls()] == [
        ("get_stock", {"product_id": "A"}),
        ("get_stock", {"product_id": "B"}),
        ("calculate", {"expression": "15 + 27"}),
    ]
    declared = resolve_tools(core().task("stock-sum"))
    assert offered == {t.schema.name: t.schema.parameters for t in declared}
    # every model call, counted and priced by the model gateway (gpt-4o-mini: $0.15/$0.60)
    assert (trajectory.usage().input_tokens, trajectory.usage().output_tokens) == (380, 42)
    assert trajectory.usage().cost_usd == pytest.approx((380 * 0.15 + 42 * 0.6) / 1e6)
    assert (trajectory.steps[0].usage.input_tokens, trajectory.steps[0].usage.output_tokens) == (
        100,
        20,
    )
    assert trajectory.steps[0].usage.cost_usd == pytest.approx((100 * 0.15 + 20 * 0.6) / 1e6)


async def test_bad_arguments_are_answered_by_the_gateway() -> None:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("get_stock", {"product_id": 7})]),
        ScriptedReply("I could not look it up."),
    ]
    with ModelServer(sequence_policy(script)) as server:
        record = await run_task(AGENT, options(server))
        seen = server.chat_requests[1].messages
    (call, result), *_ = record.trajectory.tool_calls()
    assert call.arguments == {"product_id": 7}
    assert result is not None and result.error_kind == "invalid_arguments"
    assert any("invalid arguments" in (m.content or "") for m in seen if m.role == "tool")
    assert not record.score.passed


def test_missing_autogen_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tools_bridge.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[autogen\]'"):
        build_agent(parse_agent_spec(AGENT))


async def test_a_cached_rerun_makes_no_model_call_and_scores_the_same(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        first = await run_task(AGENT, {**options(server), "cache": cache})
        assert server.calls == 3
    with ModelServer([]) as empty:  # nothing scripted: a provider call would fail
        again = await run_task(AGENT, {**options(empty), "cache": cache})
        assert empty.calls == 0
    assert again.trajectory.termination is Termination.COMPLETED, again.trajectory.error
    assert again.score.passed_loose and first.score.passed_loose
    assert again.trajectory.final_answer == first.trajectory.final_answer
    assert again.trajectory.usage() == first.trajectory.usage()


TEAM = "autogen:autogen_team:make_team"
TEAM_SCRIPT = [
    ScriptedReply("Products A and B have 42 units in stock together."),  # the solver
    ScriptedReply("Looks right. TERMINATE"),  # the reviewer: the team's last message
]


@pytest.fixture
def _team_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


@pytest.mark.usefixtures("_team_importable")
@pytest.mark.parametrize(
    ("answer_agent", "answer"),
    [
        (None, "Looks right. TERMINATE"),  # the default: the last message
        ("solver", "Products A and B have 42 units in stock together."),
    ],
)
async def test_a_team_can_name_the_agent_whose_message_is_the_answer(
    answer_agent: str | None, answer: str
) -> None:
    with ModelServer(sequence_policy(TEAM_SCRIPT, per_conversation=False)) as server:
        chosen = {} if answer_agent is None else {"answer_agent": answer_agent}
        # make_team takes no answer_agent: it must not be handed to the factory.
        record = await run_task(TEAM, {**options(server), **chosen})
    assert record.trajectory.termination is Termination.COMPLETED, record.trajectory.error
    assert record.trajectory.final_answer == answer


@pytest.mark.usefixtures("_team_importable")
async def test_an_answer_agent_that_never_spoke_is_an_agent_error_naming_who_did() -> None:
    with ModelServer(sequence_policy(TEAM_SCRIPT, per_conversation=False)) as server:
        record = await run_task(TEAM, {**options(server), "answer_agent": "writer"})
    trajectory = record.trajectory
    assert trajectory.termination is Termination.AGENT_ERROR
    assert trajectory.error is not None
    assert "no message from answer_agent 'writer'" in trajectory.error
    assert "reviewer, solver" in trajectory.error


@pytest.mark.parametrize("bad", ["", 3])
def test_a_bad_answer_agent_is_refused_at_build(bad: object) -> None:
    with pytest.raises(SpecError, match="--agent-arg answer_agent"):
        build_agent(parse_agent_spec(AGENT, {"answer_agent": bad}))
