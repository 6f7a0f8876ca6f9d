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
