"""``state``: expected records and files at the end, and optionally nothing else changed."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from typing import Any

from toolproof.spec import FileExpectation, StateCheck
from toolproof.worlds import World, records

from ..base import CheckResult, ScoringContext, check, result


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):  # bools are ints: keep apart
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return not isinstance(expected, bool) and abs(float(expected) - float(actual)) < 1e-9
    return bool(expected == actual)


def _record_failures(spec: StateCheck, ctx: ScoringContext) -> list[str]:
    failures = []
    for path, expected in spec.records.items():
        actual = records.get_path(ctx.final.records, path)
        if isinstance(expected, dict) and expected.get("absent") is True:
            if actual is not records.MISSING:
                failures.append(f"{path} should be absent, is {actual!r}")
        elif actual is records.MISSING:
            failures.append(f"{path} is missing, expected {expected!r}")
        elif not _same(expected, actual):
            failures.append(f"{path} is {actual!r}, expected {expected!r}")
    return failures


def _file_failures(spec: StateCheck, ctx: ScoringContext) -> list[str]:
    failures = []
    for path, want in spec.files.items():
        expect = want if isinstance(want, FileExpectation) else FileExpectation(equals=want)
        data = ctx.read_file(path)
        if not expect.exists:
            if data is not None:
                failures.append(f"{path} should not exist")
            continue
        if data is None:
            failures.append(f"{path} does not exist")
            continue
        text = data.decode("utf-8", errors="replace")
        if expect.equals is not None and text.rstrip("\n") != expect.equals.rstrip("\n"):
            shown = text if len(text) < 60 else text[:57] + "..."
            failures.append(f"{path} holds {shown!r}, expected {expect.equals!r}")
        failures.extend(f"{path} lacks {s!r}" for s in expect.contains if s not in text)
        failures.extend(f"{path} contains {s!r}" for s in expect.not_contains if s in text)
        if expect.regex is not None and re.search(expect.regex, text, re.MULTILINE) is None:
            failures.append(f"{path} does not match /{expect.regex}/")
        if expect.sha256 is not None and hashlib.sha256(data).hexdigest() != expect.sha256:
            failures.append(f"{path} was modified (hash differs)")
    return failures


def _collateral(spec: StateCheck, ctx: ScoringContext) -> list[str]:
    diff = World.diff(ctx.initial, ctx.final)
    workspace = ctx.world.workspace
    expected = list(spec.records)
    if workspace is not None:
        expected += [workspace.relative(p) for p in spec.files]
    allowed = [*expected, *spec.allow_changes]
    unexpected = [
        path
        for path in diff.changed_paths()
        if not any(
            path == a or path.startswith((a + ".", a + "[", a + "/")) or fnmatch.fnmatch(path, a)
            for a in allowed
        )
    ]
    more = [f"... and {len(unexpected) - 5} more"] if len(unexpected) > 5 else []
    return [f"unexpected change to {p}" for p in unexpected[:5]] + more


@check("state")
def evaluate(spec: StateCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Partial credit per expectation met; collateral damage fails the check."""
    failures = _record_failures(spec, ctx) + _file_failures(spec, ctx)
    total = len(spec.records) + len(spec.files)
    collateral = _collateral(spec, ctx) if spec.unchanged_elsewhere else []
    share = (total - len(failures)) / total if total else 1.0
    if collateral:
        share = min(share, 0.5)
    problems = failures + collateral
    if problems:
        return result(
            spec,
            index,
            False,
            "; ".join(problems),
            score=max(share, 0.0),
            data={"collateral": collateral},
        )
    return result(spec, index, True, f"all {total} expectations met")
