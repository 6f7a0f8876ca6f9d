"""``state``: expected records and files at the end, and optionally nothing else changed."""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass
from typing import Any

from toolproof.spec import FileExpectation, StateCheck, patterns
from toolproof.worlds import World, records

from ..base import CheckResult, ScoringContext, check, result


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):  # bools are ints: keep apart
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return not isinstance(expected, bool) and abs(float(expected) - float(actual)) < 1e-9
    return bool(expected == actual)


@dataclass
class _Expectation:
    """One listed record or file, judged at the start and at the end."""

    held_before: bool
    """It already held before the agent acted: keeping it is no progress."""
    problem: str | None
    """Why it does not hold at the end, or None."""


def _record_expectations(spec: StateCheck, ctx: ScoringContext) -> list[_Expectation]:
    out = []
    for path, expected in spec.records.items():
        out.append(
            _Expectation(
                held_before=_record_problem(path, expected, ctx.initial.records) is None,
                problem=_record_problem(path, expected, ctx.final.records),
            )
        )
    return out


def _record_problem(path: str, expected: Any, state: dict[str, Any]) -> str | None:
    actual = records.get_path(state, path)
    if isinstance(expected, dict) and expected.get("absent") is True:
        if actual is not records.MISSING:
            return f"{path} should be absent, is {actual!r}"
        return None
    if actual is records.MISSING:
        return f"{path} is missing, expected {expected!r}"
    if not _same(expected, actual):
        return f"{path} is {actual!r}, expected {expected!r}"
    return None


def _file_problems(path: str, expect: FileExpectation, ctx: ScoringContext) -> list[str]:
    data = ctx.read_file(path)
    if not expect.exists:
        return [f"{path} should not exist"] if data is not None else []
    if data is None:
        return [f"{path} does not exist"]
    failures = []
    text = data.decode("utf-8", errors="replace")
    if expect.equals is not None and text.rstrip("\n") != expect.equals.rstrip("\n"):
        shown = text if len(text) < 60 else text[:57] + "..."
        failures.append(f"{path} holds {shown!r}, expected {expect.equals!r}")
    failures.extend(f"{path} lacks {s!r}" for s in expect.contains if s not in text)
    failures.extend(f"{path} contains {s!r}" for s in expect.not_contains if s in text)
    if expect.regex is not None:
        found = patterns.search(expect.regex, text, multiline=True)
        if found == patterns.TIMED_OUT:
            failures.append(
                f"{path} could not be matched against /{expect.regex}/ within "
                f"{patterns.MATCH_TIMEOUT_S:g} s: counted as not matching"
            )
        elif not found:
            failures.append(f"{path} does not match /{expect.regex}/")
    if expect.sha256 is not None and hashlib.sha256(data).hexdigest() != expect.sha256:
        failures.append(f"{path} was modified (hash differs)")
    return failures


def _file_expectations(spec: StateCheck, ctx: ScoringContext) -> list[_Expectation]:
    """A file that holds and is byte-for-byte as it started held before (no progress)."""
    out = []
    workspace = ctx.world.workspace
    for path, want in spec.files.items():
        expect = want if isinstance(want, FileExpectation) else FileExpectation(equals=want)
        problems = _file_problems(path, expect, ctx)
        rel = path
        if workspace is not None:
            try:
                rel = workspace.relative(path)
            except ValueError:
                rel = path
        unchanged = ctx.initial.files.get(rel) == ctx.final.files.get(rel)
        out.append(
            _Expectation(
                held_before=not problems and unchanged,
                problem="; ".join(problems) if problems else None,
            )
        )
    return out


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
    """Credit is the share of the required changes made; breaking what had to stay vetoes.

    An expectation that already held before the agent acted is a guard: keeping
    it earns nothing, breaking it (or any collateral change under
    ``unchanged_elsewhere``) vetoes the episode. A check whose every expectation
    held before is a guard as a whole.
    """
    expectations = _record_expectations(spec, ctx) + _file_expectations(spec, ctx)
    required = [e for e in expectations if not e.held_before]
    broken = [e.problem for e in expectations if e.held_before and e.problem is not None]
    missing = [e.problem for e in required if e.problem is not None]
    collateral = _collateral(spec, ctx) if spec.unchanged_elsewhere else []
    guard = not required
    share = (len(required) - len(missing)) / len(required) if required else 1.0
    data: dict[str, Any] = {
        "collateral": collateral,
        "required": len(required),
        "made": len(required) - len(missing),
        "broken": broken,
    }
    problems = [p for p in missing + broken if p is not None] + collateral
    if broken or collateral:
        what = "damage: " if not missing else ""
        return result(
            spec,
            index,
            False,
            what + "; ".join(problems),
            score=0.0,
            veto=True,
            guard=guard,
            data=data,
        )
    if problems:
        return result(spec, index, False, "; ".join(problems), score=share, guard=guard, data=data)
    if guard:
        detail = f"all {len(expectations)} expectations still hold (they held from the start)"
        if not expectations:
            detail = "nothing else changed"
        return result(spec, index, True, detail, guard=True, data=data)
    return result(
        spec,
        index,
        True,
        f"all {len(expectations)} expectations met ({len(required)} required changes made)",
        data=data,
    )
