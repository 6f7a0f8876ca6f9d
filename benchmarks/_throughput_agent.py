"""The in-process agent of ``bench_throughput.py``: stock-sum's three turns, each after a wait.

The wait of turn ``t`` of epoch ``e`` is uniform over [LOW, HIGH] seconds, drawn from
``random.Random(f"{e}:{t}")``: the same on every run, so the ideal time of a run is
known exactly (:func:`latency`).
"""

from __future__ import annotations

import asyncio
import random

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.trajectory import ToolCall

LOW, HIGH = 0.1, 0.5
TURNS = 3


def latency(epoch: int, turn: int) -> float:
    """Seconds turn ``turn`` of epoch ``epoch`` waits."""
    return random.Random(f"{epoch}:{turn}").uniform(LOW, HIGH)


class StockSum:
    """Two lookups at once, a calculation, the answer (submitted, as stock-sum's answer is
    typed): a model that takes 100-500 ms a call."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.epoch = ctx.epoch

    async def act(self, observation: Observation) -> AgentTurn:
        """The scripted turn for this step, after its wait."""
        await asyncio.sleep(latency(self.epoch, observation.step))
        if observation.step == 0:
            return AgentTurn(
                tool_calls=[
                    ToolCall(id="a", name="get_stock", arguments={"product_id": "A"}),
                    ToolCall(id="b", name="get_stock", arguments={"product_id": "B"}),
                ]
            )
        if observation.step == 1:
            return AgentTurn(
                tool_calls=[ToolCall(id="c", name="calculate", arguments={"expression": "15 + 27"})]
            )
        if any(t.name == "submit_answer" for t in observation.tools):  # a typed answer
            submit = ToolCall(id="d", name="submit_answer", arguments={"answer": 42})
            return AgentTurn(tool_calls=[submit])
        return AgentTurn(content="A and B have 42 units together.")
