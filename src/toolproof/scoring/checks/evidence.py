"""``evidence``: key evidence that must appear; forbidden strings that zero the score."""

from __future__ import annotations

import json

from toolproof.spec import EvidenceCheck

from ..base import CheckResult, ScoringContext, check, result
from ._text import norm


def _haystack(spec: EvidenceCheck, ctx: ScoringContext) -> str:
    if spec.where == "answer":
        return ctx.trajectory.final_answer or ""
    if spec.where == "tool_args":
        return "\n".join(json.dumps(c.arguments) for c, _ in ctx.trajectory.tool_calls())
    parts = [s.message.content or "" for s in ctx.trajectory.steps]
    parts.append(ctx.trajectory.final_answer or "")
    return "\n".join(parts)


@check("evidence")
def evaluate(spec: EvidenceCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Partial credit for evidence found; any forbidden string vetoes the episode."""
    text = norm(_haystack(spec, ctx), spec.case_sensitive)
    hits = [e for e in spec.require if norm(e, spec.case_sensitive) in text]
    forbidden = [f for f in spec.forbid if norm(f, spec.case_sensitive) in text]
    need = len(spec.require) if spec.min_hits is None else spec.min_hits
    data = {
        "hits": hits,
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
    return result(spec, index, passed, detail, score=share if not passed else 1.0, data=data)
