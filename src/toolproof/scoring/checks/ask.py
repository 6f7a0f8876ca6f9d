"""The ``ask`` check function: credit for a clarifying question that names the ambiguity.

On an ambiguous task (two tickets match, two payees share a name) the right move is to
ask which one. Free text with "which" or a "?" somewhere cannot tell a question from a
statement ("Done: I made T-1 urgent, which was the better match than T-6.") or from a
list of everything ("T-1, T-2, ..., T-8?"). A task declares the options instead::

    - kind: custom
      name: asks_which
      function: ask
      args:
        options: ["T-1", "T-6"]        # how the message names each option
        among: "api.tickets.*"         # the entities of that kind: a record glob
                                       # (keys, or string values with a field:
                                       # "payees.*.name"), or a list of names

and the check passes only when all of these hold:

* the entities of that kind the final message names are exactly the options' (no more,
  no fewer): an entity is named by its key or value, or by an option that is part of it;
* the last sentence naming an option, or one after it, is a question (ends in "?");
* the episode changed nothing (records and files as they started): asking is instead of
  acting.
"""

from __future__ import annotations

import re
from typing import Any

from toolproof.worlds import World, records

from ..base import CheckResult, ScoringContext
from .custom import check_function

ASK_CHECK = "ask"
"""What a task writes as the ``function`` of its asking check."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
"""Where a sentence ends: after . ! or ? and a space, or at a line break (not inside
``ap@billing.test``)."""


def _nodes(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every node of a JSON value with its path, containers included."""
    out: list[tuple[str, Any]] = [(prefix, value)] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _nodes(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _nodes(item, f"{prefix}[{index}]")
    return out


def _glob(pattern: str) -> re.Pattern[str]:
    """A record glob whose ``*`` stays within one part (``api.tickets.*`` is the tickets)."""
    parts = [re.escape(chunk) for chunk in pattern.split("*")]
    return re.compile(r"[^.\[\]]*".join(parts))


def _entities(among: str | list[str], state: dict[str, Any]) -> list[str]:
    """The names of the entities of the kind: listed, or read from the records."""
    if isinstance(among, list):
        return [str(a) for a in among]
    out = []
    for path, value in _nodes(state):
        if not _glob(among).fullmatch(path):
            continue
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            out.append(str(value))
        else:
            out.append(str(records.parse_path(path)[-1]))
    return out


def _named(name: str, text: str) -> bool:
    pattern = r"(?<![\w-])" + re.escape(name) + r"(?![\w-])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def _result(name: str, passed: bool, detail: str, data: dict[str, Any]) -> CheckResult:
    return CheckResult(
        name=name,
        kind="custom",
        passed=passed,
        score=1.0 if passed else 0.0,
        detail=detail,
        data={"role": "ask", **data},
    )


@check_function(ASK_CHECK)
def ask_check(
    ctx: ScoringContext,
    options: list[str],
    among: str | list[str],
    name: str = "asks_which",
) -> CheckResult:
    """Pass when the final message asks exactly which of ``options`` is meant.

    Args:
        ctx: The scoring context of the episode.
        options: How the message names each option the task declares ambiguous.
        among: The entities of the options' kind: a record glob or a list of names.
        name: The name of the returned result.

    Returns:
        A result whose ``data`` holds the entities named and the reason.
    """
    text = ctx.trajectory.final_answer or ""
    entities = _entities(among, ctx.initial.records)
    owners = {
        entity
        for entity in entities
        for option in options
        if option.lower() == entity.lower() or _named(option, entity)
    }
    named = {
        entity
        for entity in entities
        if _named(entity, text) or any(_named(o, text) and _named(o, entity) for o in options)
    }
    data: dict[str, Any] = {"named": sorted(named), "options": list(options)}
    if not text.strip():
        return _result(name, False, "no final message: nothing was asked", data)
    if not World.diff(ctx.initial, ctx.final).empty:
        return _result(name, False, "the world changed: asking is instead of acting", data)
    missing = [o for o in options if not _named(o, text)]
    if missing:
        return _result(name, False, f"the message does not name {missing}", data)
    extra = sorted(named - owners)
    if extra:
        return _result(name, False, f"the message names more than the options: {extra}", data)
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    last = max(
        (i for i, s in enumerate(sentences) if any(_named(o, s) for o in options)), default=-1
    )
    if last < 0 or not any(s.endswith("?") for s in sentences[last:]):
        return _result(name, False, "the options are not put as a question (no '?')", data)
    return _result(name, True, f"asks which of {', '.join(options)} is meant", data)
