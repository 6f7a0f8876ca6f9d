"""``output``: checks on the final answer."""

from __future__ import annotations

from toolproof.spec import OutputCheck, patterns

from ..base import CheckResult, ScoringContext, check, result
from ._commit import (
    PASTED_PROSE_MIN_CHARS,
    number_hedge,
    pasted_output,
    regex_options,
    self_doubt,
    text_hedge,
    world_dump,
    world_values,
)
from ._text import norm, numbers_in, parse_json_loose


def _hedges(spec: OutputCheck, ctx: ScoringContext, answer: str) -> list[str]:
    """Why the answer names rival candidates for the one fact asked (see ``_commit``),
    doubts or denies what it says, or pastes a tool's output (a dump, not an answer)."""
    if not answer:
        return []
    doubt = self_doubt(answer) or pasted_output(answer, ctx.trajectory, PASTED_PROSE_MIN_CHARS)
    if doubt is not None:
        return [f"the answer does not commit: {doubt}"]
    if spec.allow_multiple:
        return []
    question = ctx.instance.task.description
    records = ctx.initial.records
    found: list[str] = []
    dump = world_dump(answer, world_values(records, question))
    if dump is not None:
        return [f"the answer does not commit: {dump}"]
    if spec.number is not None:
        why = number_hedge(answer, spec.number, spec.tolerance, question)
        if why is not None:
            found.append(f"the answer does not commit: {why}")
    texts = [
        (list(spec.contains), False),
        (list(spec.any_of), True),
        ([spec.equals] if spec.equals is not None else [], False),
    ]
    if spec.regex is not None:  # the options the pattern accepts, e.g. R3 for \bR3\b
        pattern = spec.regex
        accepted = regex_options(
            lambda text: patterns.search(pattern, text, ignore_case=not spec.case_sensitive),
            records,
        )
        texts.append((accepted, True))
    for expected, alternatives in texts:
        if expected:
            why = text_hedge(answer, expected, records, question, any_of=alternatives)
            if why is not None:
                found.append(f"the answer does not commit: {why}")
                break
    return found


@check("output")
def evaluate(spec: OutputCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """All the given conditions must hold for the answer, and it must commit.

    An answer that names rival candidates for the one fact asked (two prices,
    every option) fails unless ``allow_multiple`` is set; JSON with a field
    given twice with different values fails too.
    """
    answer = (ctx.trajectory.final_answer or "").strip()
    text = norm(answer, spec.case_sensitive)
    failures: list[str] = []
    if spec.equals is not None and text != norm(spec.equals.strip(), spec.case_sensitive):
        failures.append(f"answer is not {spec.equals!r}")
    failures.extend(
        f"answer lacks {item!r}"
        for item in spec.contains
        if norm(item, spec.case_sensitive) not in text
    )
    failures.extend(
        f"answer contains {item!r}"
        for item in spec.not_contains
        if norm(item, spec.case_sensitive) in text
    )
    if spec.any_of and not any(norm(i, spec.case_sensitive) in text for i in spec.any_of):
        failures.append(f"answer has none of {spec.any_of!r}")
    if spec.regex is not None:
        found = patterns.search(spec.regex, answer, ignore_case=not spec.case_sensitive)
        if found == patterns.TIMED_OUT:
            failures.append(
                f"answer could not be matched against /{spec.regex}/ within "
                f"{patterns.MATCH_TIMEOUT_S:g} s: counted as not matching"
            )
        elif not found:
            failures.append(f"answer does not match /{spec.regex}/")
    if spec.number is not None:
        target = spec.number
        if not any(abs(n - target) <= spec.tolerance for n in numbers_in(answer)):
            failures.append(f"answer does not state {target:g} (±{spec.tolerance:g})")
    if spec.json_fields is not None:
        try:
            data = parse_json_loose(answer)
        except ValueError as exc:
            failures.append(f"answer JSON: {exc}")
        else:
            for key, expected in spec.json_fields.items():
                if not isinstance(data, dict) or data.get(key) != expected:
                    got = data.get(key) if isinstance(data, dict) else None
                    failures.append(f"answer JSON field {key!r} is {got!r}, expected {expected!r}")
    if not failures:
        failures.extend(_hedges(spec, ctx, answer))
    shown = answer if len(answer) < 80 else answer[:77] + "..."
    if failures:
        return result(spec, index, False, "; ".join(failures) + f" (answer: {shown!r})")
    return result(spec, index, True, f"answer {shown!r} is right")
