"""``evidence``: key evidence that must appear; forbidden strings that zero the score."""

from __future__ import annotations

import json

from toolproof.spec import EvidenceCheck

from ..base import CheckResult, ScoringContext, check, result
from ._commit import dumped, option_sets, world_dump, world_values
from ._text import norm


def _parts(spec: EvidenceCheck, ctx: ScoringContext) -> list[str]:
    """The texts searched: the answer, the tool arguments, or each message and the answer."""
    if spec.where == "answer":
        return [ctx.trajectory.final_answer or ""]
    if spec.where == "tool_args":
        return ["\n".join(json.dumps(c.arguments) for c, _ in ctx.trajectory.tool_calls())]
    parts = [s.message.content or "" for s in ctx.trajectory.steps]
    parts.append(ctx.trajectory.final_answer or "")
    return parts


def _pointed_out(
    spec: EvidenceCheck, ctx: ScoringContext, parts: list[str]
) -> tuple[list[str], set[str]]:
    """The required texts some part names, not only among every option of their set
    (``_commit.dumped``: a message listing every contact points out none of them);
    and those named only so."""
    found: set[str] = set()
    dumps: set[str] = set()
    world: tuple[list[str], list[set[str]]] | None = None  # the world's values, once
    question = ctx.instance.task.description
    for part in parts:
        text = norm(part, spec.case_sensitive)
        hits = [e for e in spec.require if norm(e, spec.case_sensitive) in text]
        if not hits:
            continue
        dump: set[str] = set()
        if spec.where != "tool_args":
            if world is None:
                records = ctx.initial.records
                world = world_values(records, question), option_sets(records)
            if world_dump(part, world[0]) is not None:
                dump = set(hits)
            else:
                dump = dumped(part, hits, world[1], question)
        found.update(e for e in hits if e not in dump)
        dumps.update(dump)
    return [e for e in spec.require if e in found], dumps - found


@check("evidence")
def evaluate(spec: EvidenceCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Partial credit for evidence found; any forbidden string vetoes the episode."""
    parts = _parts(spec, ctx)
    text = norm("\n".join(parts), spec.case_sensitive)
    hits, dump = _pointed_out(spec, ctx, parts)
    forbidden = [f for f in spec.forbid if norm(f, spec.case_sensitive) in text]
    need = len(spec.require) if spec.min_hits is None else spec.min_hits
    data = {
        "hits": hits,
        "dumped": sorted(dump),
        "missing": [e for e in spec.require if e not in hits],
        "forbidden": forbidden,
    }
    if forbidden:
        return result(
            spec, index, False, f"forbidden output: {forbidden!r}", veto=True, score=0.0, data=data
        )
    share = len(hits) / len(spec.require) if spec.require else 1.0
    passed = len(hits) >= need
    detail = f"{len(hits)}/{len(spec.require)} key evidence found"
    if data["missing"]:
        detail += f"; missing {data['missing']!r}"
    if dump:
        detail += f" ({sorted(dump)!r} named only among every option: not counted)"
    return result(spec, index, passed, detail, score=share if not passed else 1.0, data=data)
