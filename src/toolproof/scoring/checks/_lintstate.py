"""What the lint checks share: the harness's linter run, the initial files, the changes.

The final linter run (and the project's own tests) happens once per episode, in a
fresh sandbox on the final workspace, with the episode's pinned environment; the
result is kept in ``world.extras`` so that every lint check reads the same one.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from toolproof.envs import EpisodeEnv, LintReport, run_harness
from toolproof.spec.lint_checks import IGNORED_CHANGES, LintCheck
from toolproof.tools.toolkits.shell import backend_name
from toolproof.worlds import World

from ..base import ScoringContext

__all__ = [
    "SUPPRESSION_MARKERS",
    "FinalLint",
    "changed_files",
    "final_lint",
    "initial_files",
    "matches",
    "suppressions",
]

_MEMO_KEY = "toolproof.lint.final"
SUPPRESSION_MARKERS = (
    r"#\s*noqa\b",
    r"#\s*(?:ruff|flake8)\s*:\s*noqa",
    r"#\s*type\s*:\s*ignore",
    r"#\s*pylint\s*:\s*disable",
    r"#\s*ruff\s*:\s*(?:disable|enable)",
    r"eslint-disable",
    r"eslint-enable",
    r"/\*\s*eslint\s",
    r"/\*\s*eslint-env\b",
    r"/\*\s*globals?\s",
    r"@ts-ignore",
    r"@ts-expect-error",
    r"@ts-nocheck",
    r"per-file-ignores",
)
"""Regular expressions (case-insensitive) of comments and settings that silence a linter."""


def matches(rel: str, patterns: list[str]) -> bool:
    """Whether a workspace path matches a glob (``**/x`` also matches ``x`` at the top)."""
    return any(
        fnmatch.fnmatchcase(rel, p) or (p.startswith("**/") and fnmatch.fnmatchcase(rel, p[3:]))
        for p in patterns
    )


def changed_files(ctx: ScoringContext, ignore: list[str] | None = None) -> list[str]:
    """Files added, modified or removed during the episode, tool caches left out."""
    diff = World.diff(ctx.initial, ctx.final)
    changed = [*diff.files_added, *diff.files_modified, *diff.files_removed]
    skip = IGNORED_CHANGES if ignore is None else ignore
    return sorted(p for p in changed if not matches(p, skip))


def initial_files(ctx: ScoringContext, env: EpisodeEnv | None) -> dict[str, bytes]:
    """The workspace as the task starts it: ``world.fixtures`` (beside the task), then ``files``.

    Built from the task itself, so it holds for replays too; empty when the fixtures
    directory cannot be found (no pinned environment to say where the task file is).
    """
    world = ctx.instance.task.world
    found: dict[str, bytes] = {}
    if world.fixtures and env is not None and env.base is not None:
        root = env.base / world.fixtures
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    for rel, text in world.files.items():
        key = rel.removeprefix("/workspace/").lstrip("/")
        found[key] = text.encode()
    return found


def suppressions(text: str, extra: list[str]) -> int:
    """Lines of ``text`` that hold a suppression comment or setting."""
    pattern = re.compile("|".join([*SUPPRESSION_MARKERS, *extra]), re.IGNORECASE)
    return sum(1 for line in text.splitlines() if pattern.search(line))


@dataclass
class FinalLint:
    """The harness's run on the final state.

    Attributes:
        report: What the linter found (``errors`` None when it failed to run).
        verify: Failed verification commands: command, exit code, output tail.
        from_baseline: The workspace was unchanged, so the recorded count was used.
    """

    report: LintReport
    verify: list[dict[str, Any]] = field(default_factory=list)
    from_baseline: bool = False


def final_lint(ctx: ScoringContext, spec: LintCheck, env: EpisodeEnv) -> FinalLint:
    """Run the linter (and ``verify``) on the final state once per episode.

    An episode that changed nothing is not linted again: its count is the one the
    version file records (checked against a real run at every set-up).

    Raises:
        SandboxError: the sandbox could not run the linter (an infra problem).
    """
    key = (spec.linter, spec.config, tuple(spec.paths), tuple(spec.verify))
    memo = ctx.world.extras.setdefault(_MEMO_KEY, {})
    if key in memo:
        found: FinalLint = memo[key]
        return found
    baseline = env.baseline(ctx.instance.task.id)
    if not changed_files(ctx) and baseline is not None:
        result = FinalLint(LintReport(baseline, 0 if baseline == 0 else 1), from_baseline=True)
    else:
        assert ctx.world.workspace is not None
        run = run_harness(
            ctx.world.workspace.root,
            env.settings,
            backend=backend_name(env.settings),
            linter=spec.linter,
            config=spec.config,
            paths=spec.paths,
            verify=spec.verify,
            timeout_s=spec.timeout_s,
        )
        result = FinalLint(run.report, run.verify)
    memo[key] = result
    return result
