"""The ``bfcl.multi_turn`` check: the episode's calls per user turn, judged by BFCL's checker.

BFCL scores a multi-turn entry by replaying the model's decoded calls, turn by
turn and step by step, on fresh backend instances beside its ground truth, then
comparing the instances' state and checking that the ground truth's execution
results are among the model's (``multi_turn_checker``). toolproof hands that same
function the calls of each step of each user turn (the engine's ``user_turn``
step annotation says which turn a step belongs to), decoded the way BFCL decodes a
function-calling response: ``name(arg=value, ...)`` with ``repr`` of each JSON value.

The checker runs ``eval`` on those strings, so toolproof builds them only from a
method name of the entry's backends and identifier argument names; any other call
becomes ``toolproof_unknown_function()``, which fails in the checker exactly as an
undefined name does (an error result, no state change). An episode that did not
reach the end of its last user turn, or a turn with more steps than BFCL allows,
is what BFCL calls force-terminated.
"""

from __future__ import annotations

import keyword
import re
import threading
import uuid
from typing import Any

from toolproof.scoring import ScoringContext
from toolproof.scoring.checks.custom import UPSTREAM_VERDICT, check_function
from toolproof.trajectory import Termination, Trajectory

from . import _bfcl_upstream as upstream

CHECK_FUNCTION = "bfcl.multi_turn"
UNKNOWN = "toolproof_unknown_function()"
"""What a call the checker must not evaluate becomes: an undefined name, as BFCL sees one."""
MAX_STEPS_PER_TURN = 20
"""bfcl-eval 2026.3.23's ``MAXIMUM_STEP_LIMIT``: more steps with calls in a turn force-quit."""
_USER_TURN = "user_turn"
_lock = threading.Lock()


def decode_call(name: str, arguments: dict[str, Any], methods: set[str]) -> str:
    """One call as BFCL's decoded string, or :data:`UNKNOWN` when it cannot be evaluated safely."""
    if name not in methods or not isinstance(arguments, dict):
        return UNKNOWN
    parts = []
    for key, value in arguments.items():
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            return UNKNOWN
        parts.append(f"{key}={value!r}")
    return f"{name}({','.join(parts)})"


def decoded_turns(
    trajectory: Trajectory, turns: int, methods: set[str]
) -> tuple[list[list[list[str]]], str | None]:
    """The decoded calls per user turn and per step, and why the episode counts as
    force-terminated (None when it reached the end of its last turn)."""
    decoded: list[list[list[str]]] = [[] for _ in range(turns)]
    reached = 0
    for step in trajectory.steps:
        turn = step.annotations.get(_USER_TURN, 0)
        if not isinstance(turn, int) or not 0 <= turn < turns:
            return decoded, f"a step of user turn {turn!r}; the task has {turns}"
        reached = max(reached, turn)
        calls = [decode_call(c.name, c.arguments, methods) for c in step.message.tool_calls]
        if calls:
            decoded[turn].append(calls)
    ended = trajectory.termination in (Termination.COMPLETED, Termination.GAVE_UP)
    if not ended or reached < turns - 1:
        return decoded, (
            f"the episode ended ({trajectory.termination.value}) in user turn {reached} of {turns}"
        )
    for turn, steps in enumerate(decoded):
        if len(steps) > MAX_STEPS_PER_TURN:
            return decoded, (
                f"user turn {turn} took {len(steps)} steps with calls; BFCL stops a turn after "
                f"{MAX_STEPS_PER_TURN}"
            )
    return decoded, None


def _checker() -> Any:
    upstream.require()
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    return multi_turn_checker, multi_turn_utils


def check(
    decoded: list[list[list[str]]],
    ground_truth: list[list[str]],
    entry: dict[str, Any],
    category: str,
) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` verdict on decoded calls.

    The checker keeps its instances in its module's globals under the model name and
    the entry id; each call here uses a fresh model name and removes them afterwards.
    """
    checker, utils = _checker()
    model = f"toolproof_{uuid.uuid4().hex}"
    try:
        result: dict[str, Any] = checker(decoded, ground_truth, entry, category, model)
    except Exception as exc:  # an assertion inside the checker: BFCL's run would stop there
        result = {
            "valid": False,
            "error_type": "multi_turn:checker_error",
            "error_message": f"{type(exc).__name__}: {exc}",
        }
    finally:
        prefix = re.sub(r"[-./:]", "_", model)
        with _lock:
            for name in [n for n in vars(utils) if n.startswith(prefix)]:
                vars(utils).pop(name, None)
    return result


def verdict(
    trajectory: Trajectory,
    *,
    category: str,
    entry: dict[str, Any],
    ground_truth: list[list[str]],
    methods: list[str],
) -> tuple[bool, str]:
    """``(passed, detail)`` for one episode, BFCL's way."""
    decoded, stopped = decoded_turns(trajectory, len(ground_truth), set(methods))
    if stopped is not None:
        return False, f"bfcl_eval multi_turn: multi_turn:force_terminated: {stopped}"
    result = check(decoded, ground_truth, entry, category)
    if result.get("valid"):
        return True, "bfcl_eval multi_turn_checker: valid"
    message = str(result.get("error_message", ""))[:300]
    return False, f"bfcl_eval multi_turn_checker: {result.get('error_type', 'invalid')}: {message}"


@check_function(CHECK_FUNCTION)
def bfcl_multi_turn(
    ctx: ScoringContext,
    *,
    category: str,
    entry: dict[str, Any],
    ground_truth: list[list[str]],
    methods: list[str],
) -> tuple[bool, str]:
    """The custom check every BFCL multi-turn task carries."""
    return verdict(
        ctx.trajectory,
        category=category,
        entry=entry,
        ground_truth=ground_truth,
        methods=methods,
    )


# BFCL's checker decides alone, as BFCL scores it (nothing here passes for doing nothing).
setattr(bfcl_multi_turn, UPSTREAM_VERDICT, True)
