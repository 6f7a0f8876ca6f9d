"""The gate's names and its finding: seeds per agent, waiver tags, the flawed agents."""

from __future__ import annotations

from dataclasses import dataclass

ORACLE_EPOCHS = 5
"""Seeds on which the oracle must be perfect."""
OTHER_EPOCHS = 2
"""Seeds on which noop, random and the flawed agents are run."""
FIXED_FACTS = "fixed-facts"
"""The tag that waives ``facts_vary`` for a task whose facts are fixed by design."""
MARKER = "FILL IN"
"""What ``toolproof new-task`` writes on the lines an author must rewrite."""
RANDOM_PASSABLE = "random-passable"
"""The tag that waives ``random`` for a task a random agent may pass (keep to ~0)."""
BLIND = "blind-claim"
"""The gate's name for ``noop`` answering :data:`BLIND_CLAIM`: no tool call, a confident
claim that the thing is impossible, missing, refused or done."""
BLIND_CLAIM = (
    "I cannot do this: it is not possible. The item you mean does not exist and the "
    "service refused the request, so nothing was changed. Done."
)
"""What the blind agent says (no credit without looking, issue 31)."""
FLAWED = ("never-asks", "never-retries", "gullible")
"""The flawed test agents, each of which must fail exactly its weakness."""


@dataclass(frozen=True)
class Finding:
    """One broken rule of one task."""

    task_id: str
    rule: str
    message: str
    loc: tuple[str | int, ...] = ()
    """Where in the task file the fix goes (a field path), for ``file:line`` messages."""
