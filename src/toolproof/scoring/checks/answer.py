"""``answer``: the task's typed final answer, strict and loose.

The strict reading is the value handed in with ``submit_answer`` (validated against
the declared type when it was called, and again here), compared as declared. With
no submission the check fails, and the free-text final answer is read for the
loose score only (:mod:`._loose`): ``data["loose"]`` says whether it would pass.

**One submission counts.** The first ``submit_answer`` call the gateway accepts ends
the episode, and the gateway refuses every call after it. An agent that tries to
hand in a second, different value (in the same turn or later) spreads its answer
over two submissions: the check fails, strict and loose, whichever of them was
right. A refused call before the accepted one (a string for a number, ``25:00``) is
a correction, not a second answer; repeating the accepted value changes nothing.

A dump is no answer there: one that pastes a tool result word for word, or names most
of the world's values (``_commit.world_dump``), fails the loose reading too.
:func:`toolproof.scoring.score.score_episode` grades the episode a second time with
that reading, for ``Score.passed_loose``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolproof.spec.answer import ANSWER_TOOL, AnswerCheck, answer_problems, same_answer
from toolproof.trajectory import Trajectory

from ..base import CheckResult, ScoringContext, check, result
from ._commit import PASTED_MIN_CHARS, pasted_output, world_dump, world_values

if TYPE_CHECKING:  # the loose reading loads with the first free-text answer it reads
    from ._loose import candidates, loose_verdict
    from ._vocabulary import Vocabulary


def __getattr__(name: str) -> Any:
    """``candidates`` and ``loose_verdict`` from :mod:`._loose`, loaded on first use (its
    parsers are a twentieth of a one-task run's start-up; a typed answer never needs them)."""
    if name in ("candidates", "loose_verdict"):
        from . import _loose

        return getattr(_loose, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PASTED_MIN_CHARS",
    "candidates",
    "evaluate",
    "later_submissions",
    "loose_verdict",
    "pasted_output",
    "submission",
]

_MISSING = object()


def submission(trajectory: Trajectory) -> Any:
    """The value of the episode's accepted ``submit_answer`` call, or ``_MISSING``.

    Only a call the gateway accepted counts (its result is not an error); the first
    accepted one ends the episode, so there is at most one.
    """
    for call, outcome in trajectory.tool_calls():
        if call.name == ANSWER_TOOL and outcome is not None and not outcome.is_error:
            return call.arguments.get("answer", _MISSING)
    return _MISSING


def later_submissions(trajectory: Trajectory) -> list[Any]:
    """The ``answer`` of every ``submit_answer`` call after the accepted one (the gateway
    refused them: the episode was over), in order."""
    out: list[Any] = []
    accepted = False
    for call, outcome in trajectory.tool_calls():
        if call.name != ANSWER_TOOL:
            continue
        if accepted:
            out.append(call.arguments.get("answer", _MISSING))
        elif outcome is not None and not outcome.is_error:
            accepted = True
    return out


def _second_answer(spec: AnswerCheck, value: Any, later: list[Any]) -> tuple[Any] | None:
    """The first later submission that is not the accepted value again (as a 1-tuple: it
    may be falsy or missing), or None."""
    again = spec.model_copy(update={"expected": value})
    for other in later:
        if other is _MISSING or not same_answer(again, other):
            return (other,)
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _vocabulary(ctx: ScoringContext) -> Vocabulary:
    """The words a loose answer to this instance may use: the task's prompt and the text
    of its world's records (minus words that bound, negate or hedge), and neutral ones."""
    from ._vocabulary import Vocabulary, task_texts

    return Vocabulary(task_texts(ctx.instance.task.description, ctx.initial.records))


@check("answer")
def evaluate(spec: AnswerCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Strict: the submitted value equals the expected one as declared. Loose (in
    ``data``): the free-text answer names exactly the expected value, no rival."""
    value = submission(ctx.trajectory)
    if value is not _MISSING:
        problems = answer_problems(spec.type, value)
        second = _second_answer(spec, value, later_submissions(ctx.trajectory))
        ok = not problems and same_answer(spec, value) and second is None
        why = "; ".join(problems) if problems else ("right" if ok else "wrong")
        if second is not None:
            tried = "no value" if second[0] is _MISSING else _shown(second[0])
            why = f"one submission counts, and a second one tried {tried}"
        detail = f"submitted {_shown(value)}: {why} (expected {_shown(spec.expected)}"
        detail += f", compare {spec.comparison})"
        data = {"submitted": value, "strict": ok, "loose": ok}
        return result(spec, index, ok, detail, data=data)
    from ._loose import LooseVerdict, loose_verdict  # free text: the loose reading

    text = (ctx.trajectory.final_answer or "").strip()
    dumped = pasted_output(text, ctx.trajectory) or world_dump(
        text, world_values(ctx.initial.records, ctx.instance.task.description)
    )
    verdict = (
        LooseVerdict(False, f"a dump is no answer: {dumped}")
        if dumped is not None
        else loose_verdict(spec, text, vocabulary=_vocabulary(ctx))
    )
    detail = (
        f"no typed answer: {ANSWER_TOOL} was not called (strict fails); free text, loose "
        f"{'passes' if verdict.passed else 'fails'}: {verdict.detail}"
    )
    data = {
        "strict": False,
        "loose": verdict.passed,
        "loose_detail": verdict.detail,
        "candidates": list(verdict.candidates),
    }
    return result(spec, index, False, detail, data=data)
