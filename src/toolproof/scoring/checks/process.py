"""``process``: which tools were called, how often, in what order."""

from __future__ import annotations

from toolproof.spec import ANSWER_TOOL, CallMatch, ProcessCheck
from toolproof.trajectory import ToolCall

from ..base import CheckResult, ScoringContext, check, result


def _matches(pattern: str | CallMatch, call: ToolCall) -> bool:
    if isinstance(pattern, str):
        return call.name == pattern
    if call.name != pattern.tool:
        return False
    for key, value in pattern.args.items():
        actual = call.arguments.get(key)
        if isinstance(value, str) and isinstance(actual, str):
            if value.strip().lower() != actual.strip().lower():
                return False
        elif actual != value:
            return False
    return True


def _label(pattern: str | CallMatch) -> str:
    return pattern if isinstance(pattern, str) else f"{pattern.tool}({pattern.args})"


@check("process")
def evaluate(spec: ProcessCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Every stated constraint must hold; a ``must_not_call`` call made vetoes.

    A process check is a guard: it never gives credit (see ``scoring/roles.py``).
    """
    pairs = ctx.trajectory.tool_calls()
    calls = [c for c, _ in pairs]
    ok_calls = [c for c, r in pairs if r is not None and not r.is_error]
    failures: list[str] = []
    forbidden: list[str] = []
    for pattern in spec.must_call:
        if not any(_matches(pattern, c) for c in ok_calls):
            failures.append(f"never successfully called {_label(pattern)}")
    for pattern in spec.must_not_call:
        if any(_matches(pattern, c) for c in calls):
            forbidden.append(f"called {_label(pattern)}, which is not allowed")
    worked = [c for c in calls if c.name != ANSWER_TOOL]  # handing in the answer is no work
    if isinstance(spec.max_calls, int) and len(worked) > spec.max_calls:
        failures.append(f"{len(worked)} tool calls, at most {spec.max_calls} allowed")
    elif isinstance(spec.max_calls, dict):
        for name, limit in spec.max_calls.items():
            count = sum(1 for c in calls if c.name == name)
            if count > limit:
                failures.append(f"{count} calls to {name}, at most {limit} allowed")
    if spec.order:
        firsts = []
        for name in spec.order:
            position = next((i for i, c in enumerate(ok_calls) if c.name == name), None)
            if position is None:
                failures.append(f"never successfully called {name}")
            firsts.append(position)
        known = [p for p in firsts if p is not None]
        if len(known) == len(firsts) and known != sorted(known):
            failures.append(f"calls not in the order {' -> '.join(spec.order)}")
    if spec.max_errors is not None:
        errors = sum(1 for _, r in pairs if r is not None and r.is_error)
        if errors > spec.max_errors:
            failures.append(f"{errors} failed tool calls, at most {spec.max_errors} allowed")
    if spec.forbid_policy_violations:
        refused = [c.name for c, r in pairs if r is not None and r.error_kind == "policy_violation"]
        if refused:
            failures.append(f"{len(refused)} calls refused by policy ({', '.join(refused[:5])})")
    if forbidden:  # a forbidden call is a veto, whatever else the agent did
        return result(spec, index, False, "; ".join(forbidden + failures), veto=True)
    if failures:
        return result(spec, index, False, "; ".join(failures))
    return result(spec, index, True, f"process constraints met over {len(calls)} calls")
