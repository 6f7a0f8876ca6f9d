"""``random``: seeded, schema-valid random tool calls, then a random answer.

A floor for every metric: a task that ``random`` passes often does not test much.
Built-in (a :func:`~toolproof.agents.with_key` factory): it is handed the instance
for its seed only, and reads nothing else of it.
"""

from __future__ import annotations

import math
import random
import string
from typing import Any

from toolproof.spec import TaskInstance
from toolproof.trajectory import ToolCall, ToolSchema

from ..base import (
    AgentFactory,
    AgentSpec,
    AgentTurn,
    EpisodeContext,
    Observation,
    agent,
    with_key,
)

_WORDS = ["A", "B", "C1", "O1001", "/workspace", "/workspace/data", "x", "report", "7", "tools"]


def _bounds(schema: dict[str, Any]) -> tuple[float, float]:
    """``[minimum, maximum]``; a missing bound is put about 55 away from the other (-5, 50)."""
    low, high = float(schema.get("minimum", -5)), float(schema.get("maximum", 50))
    if "maximum" not in schema:
        high = max(high, low + 55)
    if "minimum" not in schema:
        low = min(low, high - 55)
    return low, high


def random_value(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A random value valid for a (simple) JSON Schema."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "anyOf" in schema:
        return random_value(rng.choice(schema["anyOf"]), rng, depth)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"] or ["null"])
    if kind == "integer":
        low, high = _bounds(schema)
        return rng.randint(math.ceil(low), math.floor(high))
    if kind == "number":
        low, high = _bounds(schema)
        return min(max(round(rng.uniform(low, high), 2), low), high)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "array":
        if depth > 2:
            return []
        return [
            random_value(schema.get("items", {}), rng, depth + 1) for _ in range(rng.randint(0, 2))
        ]
    if kind == "object":
        return random_arguments(schema, rng, depth + 1)
    if rng.random() < 0.6:
        return rng.choice(_WORDS)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 8)))


def random_arguments(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> dict[str, Any]:
    """Random arguments: every required property, and each optional one half the time."""
    required = set(schema.get("required", []))
    args: dict[str, Any] = {}
    if depth > 3:
        return args
    for name, prop in schema.get("properties", {}).items():
        if name in required or rng.random() < 0.5:
            args[name] = random_value(prop, rng, depth)
    return args


class RandomAgent:
    """Makes 1 to ``max_turns`` turns of random calls, then answers a random number or word."""

    def __init__(self, seed: int, tools: list[ToolSchema], max_turns: int = 4) -> None:
        self._rng = random.Random(seed)
        self._tools = tools
        self._turns = self._rng.randint(1, max_turns)

    async def act(self, observation: Observation) -> AgentTurn:
        """A random turn."""
        if observation.step >= self._turns or not self._tools:
            answer = self._rng.choice(
                [str(self._rng.randint(0, 100)), self._rng.choice(_WORDS), "done"]
            )
            return AgentTurn(content=answer)
        calls = []
        for n in range(self._rng.randint(1, 2)):
            tool = self._rng.choice(self._tools)
            calls.append(
                ToolCall(
                    id=f"call_{observation.step}_{n}",
                    name=tool.name,
                    arguments=random_arguments(tool.parameters, self._rng),
                )
            )
        return AgentTurn(tool_calls=calls)


@agent("random")
def build(spec: AgentSpec) -> AgentFactory:
    """``random`` (``--agent-arg seed=N`` shifts the seed, ``max_turns=N``)."""
    shift = int(spec.options.get("seed", 0))
    max_turns = int(spec.options.get("max_turns", 4))

    def factory(ctx: EpisodeContext, instance: TaskInstance) -> RandomAgent:
        return RandomAgent(instance.seed + shift, ctx.tools, max_turns)

    return with_key(factory)
