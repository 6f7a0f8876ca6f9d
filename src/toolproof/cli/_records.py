"""``validate``'s check of a task's record collections: a ``world.records`` key that no
tool of the task reads is most often a record indented one level too little (valid YAML,
so nothing else notices: ``SAV-1:`` beside ``accounts:`` instead of under it).

The collections each built-in toolkit reads are listed here (:data:`COLLECTIONS`); a task
is checked only when every tool it offers is a built-in one (an inline or plug-in tool may
read any collection), and a key that the task's own checks, effects or solution name as a
path (``NAME.`` at the start of a path, or ``records.NAME``) is known too.
"""

from __future__ import annotations

import json
import re

from toolproof.spec import Problem, Suite, Task
from toolproof.spec._suggest import did_you_mean

COLLECTIONS: dict[str, frozenset[str]] = {
    "bank": frozenset({"accounts", "transactions", "payees", "today"}),
    "mail": frozenset({"emails", "sent", "contacts", "mailbox", "today"}),
    "calendar": frozenset({"events", "today"}),
    "inventory": frozenset({"products"}),
    "orders": frozenset({"orders", "customers", "products"}),
    "rest": frozenset({"api", "api_meta"}),
    "rest_auth": frozenset({"api", "api_meta", "api_auth"}),
    "sqldb": frozenset({"sql"}),
    "calculator": frozenset(),
    "files": frozenset(),
    "shell": frozenset(),
    "live": frozenset(),
    "user": frozenset(),
}
"""The ``world.records`` collections each built-in toolkit's tools read or write."""

ALL = frozenset().union(*COLLECTIONS.values())


def _named_as_path(name: str, text: str) -> bool:
    start = r"(?:^|[\"'\s{(\[,])"
    return re.search(start + re.escape(name) + r"\.", text) is not None or (
        f"records.{name}" in text
    )


def record_problems(suite: Suite, task: Task) -> list[Problem]:
    """One problem per ``world.records`` key of ``task`` that none of its tools reads."""
    from toolproof.tools import load_builtin, registry

    records = getattr(task.world, "records", None) or {}
    if not records:
        return []
    load_builtin()
    known = registry()
    kits: set[str] = set()
    for entry in task.tools:
        if not isinstance(entry, str):
            return []  # an inline tool may read any collection
        name = entry[:-2] if entry.endswith(".*") else entry
        tool = known.get(name)
        kit = name if entry.endswith(".*") else (tool.toolkit if tool is not None else None)
        if kit is None or kit not in COLLECTIONS or (tool is not None and not _builtin(tool)):
            return []
        kits.add(kit)
    read = frozenset().union(*(COLLECTIONS[k] for k in kits)) if kits else frozenset()
    rest = json.dumps(task.model_dump(mode="json", exclude={"world"}), sort_keys=True)
    file = suite.task_file(task.id)
    problems = []
    for key in records:
        if key in read or _named_as_path(str(key), rest):
            continue
        line = task.source.line_of(("world", "records", key)) if task.source else None
        where = ", ".join(sorted(read)) or "none"
        problems.append(
            Problem(
                file,
                line,
                f"world.records.{key}",
                f"no tool of this task reads a collection {key!r} (its tools read: {where}); "
                "a record indented one level too little?" + did_you_mean(str(key), read or ALL),
            )
        )
    return problems


def _builtin(tool: object) -> bool:
    fn = getattr(tool, "fn", None)
    return str(getattr(fn, "__module__", "")).startswith("toolproof.tools.toolkits.")
