"""SWE-bench's discipline for the hidden cases of software tasks: fail-to-pass and
pass-to-pass, verified on the original code and on the reference fix.

Every ``hidden_tests`` result carries each case's outcome (``data["cases"]``). The noop
agent changes nothing, so its records are the original code; the oracle's are the
reference fix. A ``fail_to_pass`` case must fail on the first and pass on the second; a
``pass_to_pass`` case must pass on both.
"""

from __future__ import annotations

from toolproof.results import EpisodeRecord
from toolproof.spec import Task
from toolproof.spec.hidden_checks import HiddenTestsCheck

from ._rules import Finding


def _outcomes(records: list[EpisodeRecord], name: str) -> list[dict[str, str]]:
    found = []
    for record in records:
        for check in record.score.checks:
            if check.name == name and check.kind == "hidden_tests":
                cases = check.data.get("cases")
                if isinstance(cases, dict):
                    found.append({str(k): str(v) for k, v in cases.items()})
    return found


def judge_hidden_cases(
    task: Task, noop: list[EpisodeRecord], oracle: list[EpisodeRecord]
) -> list[Finding]:
    """Each hidden check's fail-to-pass cases fail on the original code (noop's records) and
    pass on the reference fix (the oracle's); its pass-to-pass cases pass on both."""
    findings: list[Finding] = []
    for index, spec in enumerate(task.success):
        if not isinstance(spec, HiddenTestsCheck):
            continue
        name = spec.name or f"{spec.kind}_{index}"
        loc: tuple[str | int, ...] = ("success", index)
        before, after = _outcomes(noop, name), _outcomes(oracle, name)
        if (noop and not before) or (oracle and not after):
            findings.append(
                Finding(task.id, "hidden_cases", f"{name}: no case outcomes recorded", loc)
            )
            continue
        f2p_passing = sorted(
            {c.id for c in spec.fail_to_pass for run in before if run.get(c.id) != "fail"}
        )
        p2p_failing = sorted(
            {c.id for c in spec.pass_to_pass for run in before if run.get(c.id) != "pass"}
        )
        not_fixed = sorted({c.id for c in spec.cases() for run in after if run.get(c.id) != "pass"})
        if f2p_passing:
            findings.append(
                Finding(
                    task.id,
                    "hidden_cases",
                    f"{name}: fail-to-pass case(s) {f2p_passing} pass on the original code: "
                    "they measure nothing; move them to pass_to_pass or make them hit the bug",
                    (*loc, "fail_to_pass"),
                )
            )
        if p2p_failing:
            findings.append(
                Finding(
                    task.id,
                    "hidden_cases",
                    f"{name}: pass-to-pass case(s) {p2p_failing} fail on the original code: "
                    "move them to fail_to_pass or fix their expectation",
                    (*loc, "pass_to_pass"),
                )
            )
        if not_fixed:
            findings.append(
                Finding(
                    task.id,
                    "hidden_cases",
                    f"{name}: case(s) {not_fixed} fail on the reference fix: fix the solution "
                    "or the expectation",
                    loc,
                )
            )
    return findings
