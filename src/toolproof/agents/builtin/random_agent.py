"""``random``: seeded, schema-valid random tool calls, then a random answer.

A floor for every metric: a task that ``random`` passes often does not test much. Its
calls are what a blind agent could make: arguments drawn from the tool schemas, or,
more often, values it has *seen*: in the prompt and in earlier tool results (an id from
a listing, a path, an amount), preferring values seen under the argument's own name
(``email_id`` from ``{"email_id": "M3"}``). So on a long task it sometimes makes a
required change by chance (archives the right mail) and earns a little credit, without
ever knowing which change was required.

Its budget of turns grows with the task's step limit (``share`` of ``max_steps``, at
least 4), so a long task gets a longer random walk; it never repeats a call it made
(the loop guard would end the episode), and its answer is a random number or word,
never a seen value.

Built-in (a :func:`~toolproof.agents.with_key` factory): it is handed the instance
for its seed only, and reads nothing else of it.
"""

from __future__ import annotations

import json
import math
import random
import re
import string
from typing import Any

from toolproof.spec import TaskInstance
from toolproof.trajectory import Message, ToolCall, ToolSchema

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

SEEN_SHARE = 0.7
"""How often an argument is drawn from seen values (when one fits) instead of the schema."""
SHARE = 0.25
"""The default turn budget, as a share of the task's ``max_steps``."""
MIN_TURNS = 4
"""The smallest turn budget (a short task's random walk, as before budgets grew)."""
MAX_SEEN = 500
"""The most values kept (the first seen); a huge listing does not grow the agent without end."""
_TOKEN = re.compile(r"/?[A-Za-z0-9][A-Za-z0-9_./@:-]{0,63}")


def _bounds(schema: dict[str, Any]) -> tuple[float, float]:
    """``[minimum, maximum]``; a missing bound is put about 55 away from the other (-5, 50)."""
    low, high = float(schema.get("minimum", -5)), float(schema.get("maximum", 50))
    if "maximum" not in schema:
        high = max(high, low + 55)
    if "minimum" not in schema:
        low = min(low, high - 55)
    return low, high


class Seen:
    """Scalar values the agent has seen: all of them, and by the key they came under.

    JSON texts are walked (a value under ``"email_id"`` is kept under that key); plain
    text (the prompt, a file, a CSV) gives its word-like tokens, under no key. At most
    :data:`MAX_SEEN` values are kept, from at most 8 levels of nesting.
    """

    def __init__(self) -> None:
        self.by_key: dict[str, list[Any]] = {}
        self.values: list[Any] = []
        self._keyed: set[tuple[str, str]] = set()
        self._plain: set[str] = set()
        self._count = 0

    def add_text(self, text: str) -> None:
        """Keep the values of one text (a tool result, the prompt)."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
            for token in _TOKEN.findall(text):
                self._keep("", token.rstrip(".:"))
            return
        self._walk(data, "", 0)

    def _walk(self, data: Any, key: str, depth: int) -> None:
        if depth > 8 or self._count >= MAX_SEEN:
            return
        if isinstance(data, dict):
            for k, v in data.items():
                self._walk(v, str(k), depth + 1)
        elif isinstance(data, list):
            for v in data:
                self._walk(v, key, depth + 1)
        elif isinstance(data, str | int | float) and not isinstance(data, bool):
            self._keep(key, data)

    def _keep(self, key: str, value: Any) -> None:
        if self._count >= MAX_SEEN or value == "":
            return
        mark = repr(value)
        if key and (key, mark) not in self._keyed:
            self._keyed.add((key, mark))
            self.by_key.setdefault(key, []).append(value)
            self._count += 1
        if mark not in self._plain:
            self._plain.add(mark)
            self.values.append(value)
            self._count += 1

    def candidates(self, name: str, schema: dict[str, Any]) -> list[Any]:
        """Seen values that fit ``schema``: those under ``name`` first, then under a key
        that ends the name (``id`` for ``email_id``), then any."""
        for pool in (
            self.by_key.get(name, []),
            [v for k, vs in self.by_key.items() if name.endswith("_" + k) for v in vs],
            self.values,
        ):
            fit = [v for v in pool if _fits(v, schema)]
            if fit:
                return fit
        return []


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether a seen scalar is valid for a simple schema (type, enum, bounds, length, a
    choice of these with ``anyOf``); a ``oneOf`` is never assumed to fit."""
    if "enum" in schema:
        return value in schema["enum"]
    if "anyOf" in schema:  # e.g. a number or null: a seen word is neither
        return any(isinstance(s, dict) and _fits(value, s) for s in schema["anyOf"])
    if "oneOf" in schema:
        return False
    kind = schema.get("type", "string")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if isinstance(value, str):
        if "string" not in kinds or "pattern" in schema:
            return False
        return int(schema.get("minLength", 0)) <= len(value) <= int(schema.get("maxLength", 10**6))
    if "number" not in kinds and not ("integer" in kinds and isinstance(value, int)):
        return False
    low, high = schema.get("minimum"), schema.get("maximum")
    return (low is None or value >= low) and (high is None or value <= high)


def random_value(
    schema: dict[str, Any], rng: random.Random, depth: int = 0, seen: Seen | None = None
) -> Any:
    """A random value valid for a (simple) JSON Schema."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "anyOf" in schema:
        return random_value(rng.choice(schema["anyOf"]), rng, depth, seen)
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
        items = schema.get("items", {})
        return [_draw("", items, rng, depth + 1, seen) for _ in range(rng.randint(0, 2))]
    if kind == "object":
        return random_arguments(schema, rng, depth + 1, seen)
    if rng.random() < 0.6:
        return rng.choice(_WORDS)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 8)))


def _draw(
    name: str, schema: dict[str, Any], rng: random.Random, depth: int, seen: Seen | None
) -> Any:
    """A seen value that fits (most of the time, when there is one), else a random one."""
    if seen is not None and rng.random() < SEEN_SHARE:
        if schema.get("type") == "array" and depth <= 2:
            fit = seen.candidates(name, schema.get("items", {}))
            if fit:
                return [rng.choice(fit)]
        else:
            fit = seen.candidates(name, schema)
            if fit:
                return rng.choice(fit)
    return random_value(schema, rng, depth, seen)


_INLINE_BUDGET = 1_000
"""Most refs :func:`_inlined` follows for one schema: refs that fan out (an ``anyOf`` of the
same ref many times, recursively) stop there."""


def _inlined(
    node: Any, root: dict[str, Any], depth: int = 0, budget: list[int] | None = None
) -> Any:
    """``node`` with each local ``$ref`` (``#/$defs/Name``, as pydantic writes an enum) replaced
    by what it points to, its own keys kept; a ref nested past 4 levels (a recursive type),
    one that points nowhere, or any past the first :data:`_INLINE_BUDGET` is dropped (its
    other keys kept)."""
    budget = [_INLINE_BUDGET] if budget is None else budget
    if isinstance(node, list):
        return [_inlined(item, root, depth, budget) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        target: Any = root if ref.startswith("#/") else None  # local refs only
        for part in ref[2:].split("/") if target is not None else []:
            target = target.get(part) if isinstance(target, dict) else None
        rest = {k: v for k, v in node.items() if k != "$ref"}
        budget[0] -= 1
        if not isinstance(target, dict) or depth >= 4 or budget[0] < 0:
            return _inlined(rest, root, depth, budget)
        return _inlined({**target, **rest}, root, depth + 1, budget)
    skip = ("$defs", "definitions")
    return {k: _inlined(v, root, depth, budget) for k, v in node.items() if k not in skip}


def random_arguments(
    schema: dict[str, Any], rng: random.Random, depth: int = 0, seen: Seen | None = None
) -> dict[str, Any]:
    """Random arguments: every required property, and each optional one half the time."""
    if depth == 0 and ("$defs" in schema or "definitions" in schema):
        schema = _inlined(schema, schema)
    required = set(schema.get("required", []))
    args: dict[str, Any] = {}
    if depth > 3:
        return args
    for name, prop in schema.get("properties", {}).items():
        if name in required or rng.random() < 0.5:
            args[name] = _draw(name, prop, rng, depth, seen)
    return args


def _new_results(messages: list[Message]) -> list[str]:
    """The texts of the tool results after the agent's last turn."""
    out: list[str] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        out.append(message.content or "")
    return out[::-1]


class RandomAgent:
    """Makes 1 to ``max_turns`` turns of random calls, then answers a random number or word."""

    def __init__(
        self, seed: int, tools: list[ToolSchema], max_turns: int = MIN_TURNS, prompt: str = ""
    ) -> None:
        self._rng = random.Random(seed)
        self._tools = tools
        self._turns = self._rng.randint(1, max(1, max_turns))
        self._seen = Seen()
        if prompt:
            self._seen.add_text(prompt)
        self._made: set[str] = set()

    def _call(self, step: int, n: int) -> ToolCall:
        """A call not made before (a few draws; the last one stands)."""
        for _ in range(5):
            tool = self._rng.choice(self._tools)
            arguments = random_arguments(tool.parameters, self._rng, seen=self._seen)
            key = json.dumps([tool.name, arguments], sort_keys=True, default=str)
            if key not in self._made:
                break
        self._made.add(key)
        return ToolCall(id=f"call_{step}_{n}", name=tool.name, arguments=arguments)

    async def act(self, observation: Observation) -> AgentTurn:
        """A random turn."""
        for text in _new_results(observation.messages):
            self._seen.add_text(text)
        if observation.step >= self._turns or not self._tools:
            answer = self._rng.choice(
                [str(self._rng.randint(0, 100)), self._rng.choice(_WORDS), "done"]
            )
            return AgentTurn(content=answer)
        calls = [self._call(observation.step, n) for n in range(self._rng.randint(1, 2))]
        return AgentTurn(tool_calls=calls)


def turn_budget(max_steps: int, share: float = SHARE) -> int:
    """The most turns of random calls for a task of ``max_steps`` turns (at least 4, and
    one turn short of the limit, for the answer)."""
    return max(min(MIN_TURNS, max_steps - 1), min(math.ceil(share * max_steps), max_steps - 1), 1)


@agent("random")
def build(spec: AgentSpec) -> AgentFactory:
    """``random`` (``--agent-arg seed=N`` shifts the seed; ``max_turns=N`` fixes the turn
    budget, else it is ``share`` (default 0.25) of the task's ``max_steps``, at least 4)."""
    shift = int(spec.options.get("seed", 0))
    fixed = spec.options.get("max_turns")
    share = float(spec.options.get("share", SHARE))

    def factory(ctx: EpisodeContext, instance: TaskInstance) -> RandomAgent:
        budget = int(fixed) if fixed is not None else turn_budget(ctx.limits.max_steps, share)
        return RandomAgent(instance.seed + shift, ctx.tools, budget, ctx.prompt)

    return with_key(factory)
