"""``hidden_tests``: tests the agent never saw, run by the harness on a clean copy of its work.

The check (spec: :class:`toolproof.spec.hidden_checks.HiddenTestsCheck`) runs the
task's hidden tests, and the visible ones as the task started them, once on the final
workspace and once on the initial one (both memoised, see ``_hiddenrun``), and scores
the tests it selects:

* credit is the share of the selected tests that failed at the start and pass now;
* it passes when every selected test passes (a skip is not a pass);
* a check whose selected tests all passed at the start is a guard: it gives no credit
  and fails when the agent broke one of them (collateral damage);
* a tampered run (tripwire tests with the wrong outcomes, a forged or repeated verdict)
  vetoes the episode, labelled ``tampered``;
* a sandbox that cannot run is an infra error, never the agent's failure.
"""

from __future__ import annotations

from typing import Any

from toolproof.spec.hidden_checks import HiddenTestsCheck

from ..base import CheckResult, ScoringContext, check, result
from ._hiddenrun import (
    FixturesMissing,
    HiddenRun,
    SandboxError,
    final_tree,
    initial_tree,
    run_tests,
    settings_for,
    tree_for,
)

_MEMO_KEY = "toolproof.hidden_tests.runs"
"""``world.extras`` key of the episode's runs, by digest (see ``_hiddenrun.run_tests``)."""


def _selected(spec: HiddenTestsCheck, ids: set[str]) -> list[str]:
    if not spec.select:
        return sorted(ids)
    return sorted(i for i in ids if any(i == p or i.startswith(p + ".") for p in spec.select))


def _failure(run: HiddenRun, test_id: str) -> str:
    outcome = run.outcomes.get(test_id)
    if outcome is None:
        module = next((m for m in run.import_errors if test_id.startswith(m + ".")), None)
        if module is not None:
            return f"{test_id}: not run, {module} did not import ({run.import_errors[module]})"
        return f"{test_id}: not run" + (f" ({run.stopped})" if run.stopped else "")
    message = run.messages.get(test_id, "")
    return f"{test_id}: {outcome}" + (f" ({message.splitlines()[-1][:200]})" if message else "")


@check("hidden_tests")
def evaluate_hidden_tests(
    spec: HiddenTestsCheck, ctx: ScoringContext, index: int = 0
) -> CheckResult:
    """Run the hidden tests on a clean copy of the final and initial workspaces; score them."""
    settings = settings_for(ctx)
    try:
        initial = initial_tree(ctx)
    except FixturesMissing as exc:
        return result(spec, index, False, f"task error: {exc}", task_error=True)
    memo = ctx.world.extras.setdefault(_MEMO_KEY, {})
    try:
        end = run_tests(spec, tree_for(spec, initial, final_tree(ctx, spec)), settings, memo)
        start = run_tests(spec, tree_for(spec, initial, initial), settings, memo)
    except SandboxError as exc:
        detail = f"the hidden tests could not run in the sandbox: {exc}"
        return result(spec, index, False, detail, data={"infra_error": True})
    if end.tampered is not None:
        detail = f"the hidden-test run was tampered with: {end.tampered}"
        found = {"tampered": end.tampered, "output": end.tail}
        return result(spec, index, False, detail, veto=True, data=found)
    chosen = _selected(spec, set(start.outcomes) | set(end.outcomes))
    missing = [p for p in spec.select if not any(i == p or i.startswith(p + ".") for i in chosen)]
    if not chosen or missing:
        detail = f"no test of the run matches select {missing or spec.select}"
        return result(spec, index, False, f"task error: {detail}", task_error=True)
    already = [i for i in chosen if start.outcomes.get(i) == "pass"]
    needed = [i for i in chosen if i not in already]
    passing = [i for i in chosen if end.outcomes.get(i) == "pass"]
    fixed = [i for i in needed if i in passing]
    broken = [i for i in already if i not in passing]
    failing = [i for i in chosen if i not in passing]
    data: dict[str, Any] = {
        "tests": len(chosen),
        "needed": len(needed),
        "fixed": len(fixed),
        "broken": broken,
        "failing": [_failure(end, i) for i in failing[:10]],
        "import_errors": end.import_errors,
    }
    if end.stopped:
        data["stopped"] = end.stopped
    guard = not needed
    share = len(fixed) / len(needed) if needed else (1.0 if not broken else 0.0)
    if not failing:
        what = f"all {len(chosen)} tests pass" + (f" ({len(fixed)} fixed)" if fixed else "")
        return result(spec, index, True, what, score=share, guard=guard, data=data)
    parts = [f"{len(passing)} of {len(chosen)} tests pass"]
    if broken:
        parts.append(f"{len(broken)} that passed at the start fail now")
    parts.append("; ".join(data["failing"][:3]))
    return result(spec, index, False, "; ".join(parts), score=share, guard=guard, data=data)
