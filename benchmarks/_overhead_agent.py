"""The toolproof side of ``bench_overhead.py``: a ``python:`` agent that reads the conversation.

Like the Inspect AI side's model callable (``_inspect/stock_sum.py``'s ``policy``), it
decides each turn from the transcript it is given: it counts its own past turns, reads the
two ``get_stock`` results to write the calculator's expression, and reads the calculator's
result for its answer, which it submits through ``submit_answer`` when the task offers it
(stock-sum's answer is typed) and says in plain text otherwise. It runs as any user's
``python:`` agent does, at toolproof's defaults (on its own thread and loop), so its side
pays for the copies and hops a real agent gets.
"""

from __future__ import annotations

import json

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.trajectory import ToolCall


class StockSumReader:
    """Two lookups at once, a calculation of what they returned, the calculated answer."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.task_id = ctx.task_id

    async def act(self, observation: Observation) -> AgentTurn:
        """The next turn, from the conversation so far."""
        messages = observation.messages
        turn = sum(1 for m in messages if m.role == "assistant")
        results = [json.loads(m.content or "{}") for m in messages if m.role == "tool"]
        if turn == 0:
            return AgentTurn(
                tool_calls=[
                    ToolCall(id="a", name="get_stock", arguments={"product_id": "A"}),
                    ToolCall(id="b", name="get_stock", arguments={"product_id": "B"}),
                ]
            )
        if turn == 1:
            stocks = [str(r["stock"]) for r in results if "stock" in r]
            expression = " + ".join(stocks)
            return AgentTurn(
                tool_calls=[
                    ToolCall(id="c", name="calculate", arguments={"expression": expression})
                ]
            )
        total = next(r["result"] for r in reversed(results) if "result" in r)
        if any(t.name == "submit_answer" for t in observation.tools):
            submit = ToolCall(id="d", name="submit_answer", arguments={"answer": total})
            return AgentTurn(tool_calls=[submit])
        return AgentTurn(content=f"A and B have {total} units together.")
