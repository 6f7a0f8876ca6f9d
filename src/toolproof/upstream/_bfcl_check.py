"""The ``bfcl.ast`` check: the agent's first turn, judged by ``bfcl_eval``'s checker.

BFCL's single-turn categories score one model response. In toolproof that is
the first assistant turn of the episode: its tool calls, with tool names mapped
back to BFCL's function names, are the decoded response handed to
``ast_checker``; later turns do not count (the agent may reply after the tools
answer, as a chat model does). On irrelevance categories the check passes when
that turn makes no call by BFCL's own ``is_empty_output``, on live_relevance when
it makes one, as BFCL's relevance runner decides.
"""

from __future__ import annotations

import json
from typing import Any

from toolproof.scoring import ScoringContext
from toolproof.scoring.checks.custom import UPSTREAM_VERDICT, check_function
from toolproof.trajectory import Trajectory

from . import _bfcl_upstream as upstream

IRRELEVANCE = ("irrelevance", "live_irrelevance")


def first_turn_calls(
    trajectory: Trajectory, names: dict[str, str]
) -> list[dict[str, dict[str, Any]]] | str:
    """The first turn's calls as BFCL's decoded form, or why they cannot be decoded."""
    if not trajectory.steps:
        return []
    calls: list[dict[str, dict[str, Any]]] = []
    for call in trajectory.steps[0].message.tool_calls:
        arguments: Any = call.arguments
        if not arguments and call.raw_arguments not in (None, "", "{}"):
            try:
                arguments = json.loads(call.raw_arguments or "")
            except ValueError:
                return f"the arguments of {call.name!r} are not JSON: {call.raw_arguments!r:.80}"
        if not isinstance(arguments, dict):
            return f"the arguments of {call.name!r} are not an object"
        calls.append({names.get(call.name, call.name): dict(arguments)})
    return calls


def verdict(
    calls: list[dict[str, dict[str, Any]]] | str,
    *,
    category: str,
    language: str,
    functions: list[dict[str, Any]],
    answer: list[dict[str, Any]],
) -> tuple[bool, str]:
    """``(passed, detail)`` for one decoded response, BFCL's way."""
    if category in IRRELEVANCE:
        if isinstance(calls, str) or upstream.is_empty_output(calls):
            return True, "no function call, as an irrelevance task requires"
        return False, f"irrelevance task answered with {len(calls)} call(s)"
    if isinstance(calls, str):
        return False, calls
    if category == "live_relevance":
        if upstream.is_empty_output(calls):
            return False, "relevance task answered without a function call"
        return True, "a function call, as a relevance task requires"
    if not calls:
        return False, "no function call in the first turn"
    result = upstream.check(functions, calls, answer, category, language)
    if result["valid"]:
        return True, "bfcl_eval ast_checker: valid"
    errors = "; ".join(str(e) for e in result.get("error", []))[:300]
    return False, f"bfcl_eval ast_checker: {result.get('error_type', 'invalid')}: {errors}"


@check_function("bfcl.ast")
def bfcl_ast(
    ctx: ScoringContext,
    *,
    category: str,
    language: str,
    functions: list[dict[str, Any]],
    answer: list[dict[str, Any]],
    names: dict[str, str],
) -> tuple[bool, str]:
    """The custom check every BFCL task carries."""
    calls = first_turn_calls(ctx.trajectory, names)
    return verdict(calls, category=category, language=language, functions=functions, answer=answer)


# BFCL scores "no call" as right on its irrelevance tasks: its verdict stands as it is.
setattr(bfcl_ast, UPSTREAM_VERDICT, True)
