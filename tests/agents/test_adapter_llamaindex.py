"""``llamaindex:module:factory``: the LlamaIndex example, driven by the scripted model server.

The example's own LlamaIndex ``OpenAI`` LLM talks to the server over real HTTP;
the task's tools reach its ``FunctionAgent`` as ``FunctionTool``s, and every
call must show up in the trajectory as a recorded, gateway-checked step.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="needs pip install 'toolproof[llamaindex]'")
pytest.importorskip("llama_index.llms.openai", reason="needs pip install 'toolproof[llamaindex]'")

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters import _tools_bridge
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import SpecError, Suite, load_suite, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall, sequence_policy
from toolproof.tools import resolve_tools
from toolproof.trajectory import Termination

# llama-index-workflows builds every agent with inspect.getmembers(), which touches
# pydantic's deprecated class attributes; the warnings are theirs, not ours.
from toolproof_helpers import STOCK_SUM_PRICED as STOCK_SUM

pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:The `__fields__` attribute is deprecated"
        ":pydantic.warnings.PydanticDeprecatedSince20"
    ),
    pytest.mark.filterwarnings(
        "ignore:The `__fields_set__` attribute is deprecated"
        ":pydantic.warnings.PydanticDeprecatedSince20"
    ),
    pytest.mark.filterwarnings(
        "ignore:Accessing the 'model_computed_fields' attribute on the instance is deprecated"
        ":pydantic.warnings.PydanticDeprecatedSince211"
    ),
    pytest.mark.filterwarnings(
        "ignore:Accessing the 'model_fields' attribute on the instance is deprecated"
        ":pydantic.warnings.PydanticDeprecatedSince211"
    ),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENT = "llamaindex:llamaindex_agent:make_agent"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(agent: str, options: dict[str, Any], task: str = "stock-sum") -> EpisodeRecord:
    """Run one episode of a core task, as `toolproof run` would."""
    config = RunConfig(suite=str(core().root), agent=agent, agent_options=options, tasks=[task])
    return await Worker(config, None, core()).run(EpisodeJob(task, 0))


async def test_llamaindex_example_completes_stock_sum() -> None:
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        record = await run_task(AGENT, {"base_url": server.base_url, "api_key": "test"})
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
    assert all(r is not None and not r.is_error for _, r in trajectory.tool_calls())
    declared = resolve_tools(core().task("stock-sum"))
    assert offered == {t.schema.name: t.schema.parameters for t in declared}
    # every model call, counted and priced by the model gateway (gpt-4o-mini: $0.15/$0.60)
    assert (trajectory.usage().input_tokens, trajectory.usage().output_tokens) == (380, 42)
    assert trajectory.usage().cost_usd == pytest.approx((380 * 0.15 + 42 * 0.6) / 1e6)


async def test_bad_arguments_are_answered_by_the_gateway() -> None:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("calculate", {"expr": "1 +"})]),
        ScriptedReply("I could not calculate it."),
    ]
    with ModelServer(sequence_policy(script)) as server:
        record = await run_task(AGENT, {"base_url": server.base_url, "api_key": "test"})
        seen = server.chat_requests[1].messages
    (call, result), *_ = record.trajectory.tool_calls()
    assert call.arguments == {"expr": "1 +"}
    assert result is not None and result.error_kind == "invalid_arguments"
    assert any("invalid arguments" in (m.content or "") for m in seen if m.role == "tool")
    assert record.trajectory.termination is Termination.COMPLETED
    assert not record.score.passed


def test_missing_llamaindex_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    def find_spec(name: str) -> None:  # as for a dotted name whose parent is not installed
        raise ModuleNotFoundError(f"No module named {name.split('.')[0]!r}")

    monkeypatch.setattr(_tools_bridge.importlib.util, "find_spec", find_spec)
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[llamaindex\]'"):
        build_agent(parse_agent_spec(AGENT))


async def test_a_cached_rerun_makes_no_model_call_and_scores_the_same(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        first = await run_task(AGENT, {"base_url": server.base_url, "api_key": "k", "cache": cache})
        assert server.calls == 3
    with ModelServer([]) as empty:  # nothing scripted: a provider call would fail
        again = await run_task(AGENT, {"base_url": empty.base_url, "api_key": "k", "cache": cache})
        assert empty.calls == 0
    assert again.trajectory.termination is Termination.COMPLETED, again.trajectory.error
    assert again.score.passed_loose and first.score.passed_loose
    assert again.trajectory.final_answer == first.trajectory.final_answer
    assert again.trajectory.usage() == first.trajectory.usage()
