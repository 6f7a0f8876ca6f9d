"""``hidden_tests``: cases the agent never saw, computed by its code, judged by the harness.

The check (spec: :class:`toolproof.spec.hidden_checks.HiddenTestsCheck`) observes its
cases on a clean copy of the final workspace (memoised, see ``_hiddenrun``) and compares
each observed value with the case's expectation here, outside the sandbox:

* credit is the share of ``fail_to_pass`` cases that pass;
* it passes when every case passes;
* a check with only ``pass_to_pass`` cases is a guard: it gives no credit and fails when
  the agent broke one of them (collateral damage);
* a case with no observation (its interpreter crashed, exited or timed out, its output
  was missing, unparseable, too big or repeated) fails; it is the agent's code, never an
  infra error;
* a sandbox that cannot run is an infra error, never the agent's failure.

Each result's ``data["cases"]`` maps every case id to ``pass`` or ``fail``, so the quality
gate can verify the fail-to-pass / pass-to-pass split from the noop and oracle records.
"""

from __future__ import annotations

from typing import Any

from toolproof.spec.hidden_checks import HiddenCase, HiddenTestsCheck
from toolproof.spec.hidden_values import Raised, decode, same, show

from ..base import CheckResult, ScoringContext, check, result
from ._hiddenrun import (
    CaseRun,
    FixturesMissing,
    SandboxError,
    final_tree,
    initial_tree,
    run_cases,
    settings_for,
    tree_for,
)

_MEMO_KEY = "toolproof.hidden_tests.runs"
"""``world.extras`` key of the episode's runs, by digest (see ``_hiddenrun.run_cases``)."""


def verdict(case: HiddenCase, run: CaseRun) -> str | None:
    """Why ``case`` fails on what ``run`` observed, or None when it passes."""
    if case.id in run.problems:
        return run.problems[case.id]
    if case.id not in run.values:
        return "no observation"
    got = run.values[case.id]
    if case.raises is not None:
        if not isinstance(got, Raised):
            return f"expected {case.raises} to be raised, got {show(got)}"
        if case.raises != got.type and case.raises not in got.bases:
            return f"expected {case.raises}, got {show(got)}"
        if case.match is not None and case.match not in got.message:
            return f"expected {case.raises} saying {case.match!r}, got {show(got)}"
        return None
    want = decode(case.expect)
    if same(want, got, case.compare, case.tolerance):
        return None
    return f"expected {show(want)}, got {show(got)}"


@check("hidden_tests")
def evaluate_hidden_tests(
    spec: HiddenTestsCheck, ctx: ScoringContext, index: int = 0
) -> CheckResult:
    """Observe the hidden cases on a clean copy of the final workspace; judge them here."""
    settings = settings_for(ctx)
    try:
        initial = initial_tree(ctx)
    except FixturesMissing as exc:
        return result(spec, index, False, f"task error: {exc}", task_error=True)
    memo = ctx.world.extras.setdefault(_MEMO_KEY, {})
    try:
        run = run_cases(spec, tree_for(spec, initial, final_tree(ctx, spec)), settings, memo)
    except SandboxError as exc:
        detail = f"the hidden cases could not run in the sandbox: {exc}"
        return result(spec, index, False, detail, data={"infra_error": True})
    why = {c.id: verdict(c, run) for c in spec.cases()}
    fixed = [c.id for c in spec.fail_to_pass if why[c.id] is None]
    broken = [c.id for c in spec.pass_to_pass if why[c.id] is not None]
    failing = [f"{cid}: {text}" for cid, text in why.items() if text is not None]
    data: dict[str, Any] = {
        "cases": {cid: "pass" if text is None else "fail" for cid, text in why.items()},
        "fail_to_pass": [c.id for c in spec.fail_to_pass],
        "pass_to_pass": [c.id for c in spec.pass_to_pass],
        "fixed": len(fixed),
        "broken": broken,
        "failing": failing[:10],
        "launches": run.launches,
    }
    if run.tail and failing:
        data["stderr_tail"] = run.tail
    guard = not spec.fail_to_pass
    share = len(fixed) / len(spec.fail_to_pass) if spec.fail_to_pass else float(not broken)
    total = len(why)
    if not failing:
        return result(
            spec, index, True, f"all {total} cases pass", score=share, guard=guard, data=data
        )
    parts = [f"{total - len(failing)} of {total} cases pass"]
    if broken:
        parts.append(f"{len(broken)} that pass on the original code fail now")
    parts.append("; ".join(failing[:3]))
    return result(spec, index, False, "; ".join(parts)[:1000], score=share, guard=guard, data=data)
