"""``submit_answer``: the typed final answer of a task that asks for a value.

A task with an ``answer`` check offers every agent this tool, whose one parameter
is the declared type (``spec.answer.submit_schema``). The gateway validates the
arguments against that schema (after the agent layer passed them through
``toolproof.trajectory.ingress``); an invalid submission is an ``invalid_arguments``
error the agent sees, and it may submit again. This tool also checks the date and
time formats, which JSON Schema validators leave unchecked. A valid submission is
kept in the episode's scratch, ends the episode (``request_stop`` with
``completed``) and is the episode's final answer; the gateway refuses every later
call. One submission counts: a later ``submit_answer`` call with a different value
(made in the same turn) is refused here and fails the answer when scored, whichever
value was right (``scoring/checks/answer.py``). Scoring reads the submission from the
recorded calls, never from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from toolproof.spec.answer import ANSWER_TOOL, AnswerCheck, answer_problems, submit_schema
from toolproof.trajectory import Termination, ToolKind, ToolSchema

from .base import ToolContext, ToolError
from .policy import request_stop

SUBMITTED_KEY = "toolproof.submitted_answer"
"""Where the episode's scratch keeps the submitted value (as ``(value,)``)."""

DESCRIPTION = (
    "Hand in your final answer to the task as a typed value. Call it once, when you are "
    "sure: it ends the task, no tool call runs after it, and a second, different answer "
    "voids the first."
)


def submitted(ctx: ToolContext) -> tuple[Any] | None:
    """The value submitted in this episode, as a 1-tuple (the value may be falsy), or None."""
    kept = ctx.scratch.get(SUBMITTED_KEY)
    return kept if isinstance(kept, tuple) else None


def submitted_text(ctx: ToolContext) -> str | None:
    """The submitted value as the episode's final answer text (JSON for non-strings)."""
    kept = submitted(ctx)
    if kept is None:
        return None
    value = kept[0]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass
class SubmitAnswerTool:
    """The ``submit_answer`` tool of one task, typed by its answer check."""

    check: AnswerCheck
    _validator: Draft202012Validator | None = field(default=None, repr=False)
    _schema: ToolSchema | None = field(default=None, repr=False)

    @property
    def schema(self) -> ToolSchema:
        """The tool as the agent sees it: one ``answer`` parameter of the declared type
        (made once; agents get copies of it, ``engine/_copies.py``)."""
        if self._schema is None:
            self._schema = ToolSchema(
                name=ANSWER_TOOL,
                description=DESCRIPTION,
                parameters=submit_schema(self.check),
                kind=ToolKind.READ,
            )
        return self._schema

    @property
    def blocking(self) -> bool:
        """Instant: it only keeps the value."""
        return False

    def validator(self) -> Draft202012Validator:
        """A cached validator of the argument schema."""
        if self._validator is None:
            self._validator = Draft202012Validator(self.schema.parameters)
        return self._validator

    def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> str:
        """Keep a valid answer and end the episode.

        Raises:
            ToolError: the value breaks the declared date or time format
                (``invalid_arguments``; the agent may submit again).
        """
        value = arguments.get("answer")
        problems = answer_problems(self.check.type, value)
        if problems:
            raise ToolError("invalid answer: " + "; ".join(problems), kind="invalid_arguments")
        ctx.scratch[SUBMITTED_KEY] = (value,)
        request_stop(ctx, Termination.COMPLETED, "the answer was submitted with submit_answer")
        return "Answer recorded; the task is over."
