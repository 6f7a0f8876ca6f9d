"""BFCL's multi-turn entries as toolproof tasks with further user turns.

A multi-turn entry becomes one task: its first turn is the prompt, every later turn
a ``user_turns`` message that the engine sends when the agent replies without a
tool call. The tools are the function documents of the entry's involved classes
(``multi_turn_func_doc/``), as ``populate_test_cases_with_predefined_functions``
gathers them; on ``multi_turn_miss_func`` the held-back functions are offered from
the turn that names them, whose user message is BFCL's own
``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``. Every tool runs the real
backend method (:mod:`._bfcl_backends`); the ``bfcl.multi_turn`` check hands the
calls per turn to BFCL's checker. The oracle plays the ground truth, each turn's
calls in one step followed by a reply.
"""

from __future__ import annotations

import ast
from typing import Any

from toolproof.spec import (
    CustomCheck,
    InlineTool,
    Problem,
    Solution,
    SolutionCall,
    SolutionTurn,
    SpecError,
    Task,
    UserTurn,
    WorldSpec,
)
from toolproof.spec.task import LimitsOverride, TaskType

from . import _bfcl_backends as backends
from . import _bfcl_multi_check as multi_check
from . import _bfcl_upstream as upstream

MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
"""BFCL v4's multi-turn categories (its leaderboard's multi-turn group)."""
ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""bfcl-eval 2026.3.23's ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``."""
TURN_REPLY = "Done."
MISSING_REPLY = "I cannot do that with what I have: please give me what is missing."


def _text(messages: list[dict[str, Any]]) -> str:
    parts = [
        m["content"] if m["role"] == "user" else f"[{m['role']}] {m['content']}" for m in messages
    ]
    return "\n\n".join(parts)


def _problem(entry: dict[str, Any], message: str) -> SpecError:
    return SpecError([Problem(None, None, str(entry.get("id")), message)])


def parse_call(text: str, parameters: dict[str, list[str]], entry: dict[str, Any]) -> SolutionCall:
    """One ground-truth call string (``cd(folder='x')``) as a call with keyword arguments.

    Positional arguments are named from the backend method's signature; values are
    read with :func:`ast.literal_eval` (nothing is evaluated).

    Raises:
        SpecError: the string is not one call of a known method with literal arguments.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError("not a call of a plain name")
        name = node.func.id
        if name not in parameters:
            raise ValueError(f"no backend method {name!r}")
        args: dict[str, Any] = {}
        for position, value in enumerate(node.args):
            args[parameters[name][position]] = ast.literal_eval(value)
        for item in node.keywords:
            if item.arg is None:
                raise ValueError("** arguments")
            args[item.arg] = ast.literal_eval(item.value)
    except (SyntaxError, ValueError, IndexError) as exc:
        raise _problem(entry, f"ground truth {text!r} cannot be read: {exc}") from None
    return SolutionCall(tool=name, args=_json(args))


def _json(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    return value


def _functions(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[int, list[str]]]:
    """The function documents offered, and the held-back names by the turn that adds them."""
    docs = [doc for name in entry["involved_classes"] for doc in upstream.function_docs(name)]
    held: dict[int, list[str]] = {}
    for turn, names in entry.get("missed_function", {}).items():
        held[int(turn)] = [n for n in names if any(d["name"] == n for d in docs)]
    return docs, held


def build_multi_turn_task(
    category: str, entry: dict[str, Any], ground_truth: list[list[str]], tool: Any, schema: Any
) -> Task:
    """One multi-turn entry as a task.

    Args:
        category: the BFCL category.
        entry: the entry from ``BFCL_v4_<category>.json``.
        ground_truth: its ground truth, one list of call strings per turn.
        tool: maps a BFCL function name to the tool name (``bfcl.tool_name``).
        schema: turns a BFCL parameter document into JSON Schema (``bfcl._schema``).

    Raises:
        SpecError: the entry's turns and ground truth disagree or a call cannot be read.
    """
    questions = entry["question"]
    if len(questions) != len(ground_truth) or not questions:
        raise _problem(entry, f"{len(questions)} turns but {len(ground_truth)} ground-truth turns")
    docs, held = _functions(entry)
    parameters = backends.method_parameters(list(entry["involved_classes"]))
    tools = [
        InlineTool(
            name=tool(doc["name"]),
            description=doc.get("description", ""),
            parameters=schema(doc.get("parameters", {}), "python"),
            kind="write",
            handler=backends.HANDLER,
        )
        for doc in docs
    ]
    turns: list[UserTurn] = []
    for index, messages in enumerate(questions[1:], start=1):
        added = [tool(name) for name in held.get(index, [])]
        content = _text(messages) if messages else ADDED_FUNCTIONS_PROMPT
        turns.append(UserTurn(content=content, tools=added))
    plays: list[tuple[list[list[SolutionCall]], str]] = []
    for calls in ground_truth:
        parsed = [parse_call(text, parameters, entry) for text in calls]
        plays.append(([parsed] if parsed else [], TURN_REPLY if parsed else MISSING_REPLY))
    check = CustomCheck(
        name="bfcl",
        function=multi_check.CHECK_FUNCTION,
        args={
            "category": category,
            "entry": {
                "id": entry["id"],
                "initial_config": entry.get("initial_config", {}),
                "involved_classes": list(entry["involved_classes"]),
            },
            "ground_truth": ground_truth,
            "methods": sorted(parameters),
        },
    )
    return Task(
        id=str(entry["id"]).lower(),
        description=_text(questions[0]),
        type=TaskType.MULTI_STEP,
        domain="bfcl",
        tags=["bfcl", f"bfcl:{category}"],
        tools=list(tools),
        world=WorldSpec(records=backends.initial_records(entry)),
        user_turns=turns,
        limits=LimitsOverride(max_steps=(multi_check.MAX_STEPS_PER_TURN + 2) * len(questions)),
        success=[check],
        solution=Solution(
            calls=list(plays[0][0]),
            answer=plays[0][1],
            turns=[SolutionTurn(calls=list(c), answer=a) for c, a in plays[1:]],
        ),
    )
