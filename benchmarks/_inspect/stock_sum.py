"""The stock-sum workload in Inspect AI, for benchmarks/bench_overhead.py.

Runs in its own virtual environment (Inspect AI is not a toolproof dependency):
N samples, each: the mock model asks for two get_stock calls at once, then a
calculate call, then answers — the same calls toolproof's oracle makes on the
core task ``stock-sum`` — and the answer is scored (``includes()`` against the
target "42"), as toolproof scores every episode. Prints one JSON line: episodes,
model turns, samples scored correct, wall and CPU time of the ``eval`` call.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ModelOutput, ModelUsage, get_model
from inspect_ai.model._model_output import ChatCompletionChoice
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolCall, tool

STOCK = {"A": 15, "B": 27}


@tool
def get_stock():  # type: ignore[no-untyped-def]
    async def execute(product_id: str) -> str:
        """Return how many units of a product are in stock.

        Args:
            product_id: The product's id, e.g. "A".
        """
        return json.dumps({"product_id": product_id, "stock": STOCK[product_id]})

    return execute


@tool
def calculate():  # type: ignore[no-untyped-def]
    async def execute(expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: The expression, e.g. "15 + 27".
        """
        left, right = expression.split("+")
        return json.dumps({"result": int(left) + int(right)})

    return execute


def _calls(turn: int) -> list[ToolCall]:
    if turn == 0:
        return [
            ToolCall(id=f"c{turn}a", function="get_stock", arguments={"product_id": "A"}),
            ToolCall(id=f"c{turn}b", function="get_stock", arguments={"product_id": "B"}),
        ]
    return [ToolCall(id=f"c{turn}", function="calculate", arguments={"expression": "15 + 27"})]


def policy(input, tools, tool_choice, config):  # type: ignore[no-untyped-def]
    turn = sum(1 for m in input if m.role == "assistant")
    if turn < 2:
        message = ChatMessageAssistant(content="", tool_calls=_calls(turn), model="mockllm/model")
        output = ModelOutput(
            model="mockllm/model",
            choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls")],
        )
    else:
        output = ModelOutput.from_content(model="mockllm/model", content="A and B: 42 units.")
    # Given usage keeps the mock model from counting tokens with a downloaded tokenizer.
    output.usage = ModelUsage(input_tokens=50, output_tokens=10, total_tokens=60)
    return output


def main() -> None:
    episodes = int(sys.argv[1])
    max_samples = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    task = Task(
        dataset=[
            Sample(id=i, input="How many units of A and B together?", target="42")
            for i in range(episodes)
        ],
        solver=[use_tools(get_stock(), calculate()), generate()],
        scorer=includes(),
    )
    model = get_model("mockllm/model", custom_outputs=policy)
    with tempfile.TemporaryDirectory() as log_dir:
        start, cpu_start = time.perf_counter(), time.process_time()
        logs = eval(task, model=model, display="none", log_dir=log_dir, max_samples=max_samples)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        log = logs[0]
        if log.status != "success":
            message = log.error.message if log.error else ""
            raise SystemExit(f"Inspect AI eval failed: {log.status}: {message[:300]}")
        samples = list(log.samples or [])
        turns = sum(sum(1 for m in s.messages if m.role == "assistant") for s in samples)
        passed = sum(
            1 for s in samples if any(score.value == "C" for score in (s.scores or {}).values())
        )
    result = {"episodes": len(samples), "turns": turns, "passed": passed}
    print(json.dumps({**result, "wall_s": wall, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
