"""Host directories that hold answer keys, which no sandbox may be shown.

A suite's task files carry reference solutions, its checks and hidden tests; a
clone of toolproof (or a copy of its package) carries every built-in suite, and its
``.git`` their whole history. A directory bound into a sandbox (a task's
``sandbox.ro_binds``, a ``cmd:`` agent's ``--agent-arg bind`` or ``cwd``) that is
one of those, holds one anywhere below it, or lies inside one, would hand an agent
the answers, so :func:`answer_key_problem` refuses it with the reason and the fix.

What counts as an answer key (``KEYS``):

* toolproof's own package directory and its built-in suites;
* a suite: a directory with a ``suite.yaml``;
* a copy of toolproof's source: a ``toolproof`` directory with ``suites`` or
  ``spec`` in it (a clone's ``src/toolproof``, another virtualenv's package);
* a run folder: a directory with a ``run.db``, ``trajectories.jsonl`` or
  ``summary.json`` (an oracle run's trajectories hold every reference solution, any
  run's check details the expected values); so a folder of runs (``runs/``) is one too;
* a git repository (a ``.git`` beside its work tree) whose work tree holds any of
  the above: a directory holding the repository shows its ``.git``, the whole history.

A directory that lies inside such a repository but outside its keys (a virtualenv
made in a clone, its ``scripts``) shows neither the ``.git`` nor a suite, and may be
bound; one inside a key (a suite's ``tasks``, the package's ``suites``) may not. Any
git history left in a bound directory (a bare clone has no work tree to judge it by;
an agent's own repository) is covered inside the sandbox (:func:`histories`).

The walk below a directory never follows a symbolic link, does not enter ``.git``
and stops after :data:`MAX_ENTRIES` entries: a larger tree cannot be shown to be
clean, so it is refused too (bind a smaller directory). Answers are kept per path
for the process (a run checks its binds once, then each episode asks again).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

__all__ = ["MAX_ENTRIES", "answer_key_problem", "histories", "package_dir"]

MAX_ENTRIES = 200_000
"""Entries walked below one bound directory before it is refused as too large to check."""

_SOURCE_MARKERS = ("suites", "spec")
RUN_MARKERS = ("run.db", "trajectories.jsonl", "summary.json")
"""Files that make a directory a run folder (``results``' run directory format)."""


def package_dir() -> Path:
    """toolproof's own package directory (its built-in suites are inside)."""
    return Path(__file__).resolve().parents[1]


def _is_key(directory: Path) -> str | None:
    """What answer key ``directory`` itself is, or None."""
    if (directory / "suite.yaml").is_file():
        return "a suite (it has a suite.yaml)"
    if directory.name == "toolproof" and any(
        (directory / marker).is_dir() for marker in _SOURCE_MARKERS
    ):
        return "a copy of toolproof's source, with its built-in suites"
    run = next((m for m in RUN_MARKERS if (directory / m).is_file()), None)
    if run is not None:
        return f"a run folder (it has a {run}: reference solutions and expected values)"
    return None


def _is_bare(directory: Path, dirs: list[str], files: list[str]) -> bool:
    """Whether ``directory`` is a bare git repository (``HEAD``, ``objects``, ``refs``)."""
    return "HEAD" in files and {"objects", "refs"} <= set(dirs)


@functools.lru_cache(maxsize=256)
def _histories(top: Path) -> tuple[Path, ...]:
    histories: list[Path] = []
    seen = 0
    for current, dirs, files in os.walk(top, followlinks=False):
        here = Path(current)
        if _is_bare(here, dirs, files):
            histories.append(here)
            dirs.clear()
            continue
        if ".git" in dirs:
            dirs.remove(".git")
            if not (here / ".git").is_symlink():  # a link shows its target, judged there
                histories.append(here / ".git")
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            break  # answer_key_problem refuses such a tree
    return tuple(histories)


def histories(host: str | Path) -> tuple[Path, ...]:
    """Every git history at or below the directory ``host``: ``.git`` directories and
    bare repositories (their objects hold every file ever committed).

    A bind that passed :func:`answer_key_problem` may still hold one (a bare clone has
    no work tree to judge it by, an agent's own repository has its history): the
    sandbox covers each with an empty directory, so no history is ever shown.
    """
    try:
        path = Path(host).resolve()
        return _histories(path) if path.is_dir() else ()
    except (OSError, RuntimeError):
        return ()


def _key_below(top: Path, budget: int = MAX_ENTRIES) -> tuple[Path, str] | None:
    """The first answer key at or below ``top``: (where, what), or None.

    Raises:
        OverflowError: More than ``budget`` entries were walked without finding one.
    """
    seen = 0
    for current, dirs, _files in os.walk(top, followlinks=False):
        here = Path(current)
        found = _is_key(here)
        if found is not None:
            return here, found
        if ".git" in dirs:
            dirs.remove(".git")  # its history is judged by the work tree around it
        if _is_bare(here, dirs, _files):
            dirs.clear()  # no work tree: hidden by the sandbox (``histories``)
        seen += len(dirs) + len(_files)
        if seen > budget:
            raise OverflowError(seen)
    return None


def answer_key_problem(host: str | Path, *protected: Path) -> str | None:
    """Why binding the host directory ``host`` into a sandbox would expose answer keys.

    Args:
        host: The host path to bind (a file or a directory).
        protected: More directories that hold answer keys (the suite being loaded).

    Returns:
        The reason with the fix, or None when the path shows no answer key. A path that
        does not exist (other checks say so) is judged by the folders it would lie in.
    """
    try:
        path = Path(host).resolve()
        return _problem(str(host), path, tuple(p.resolve() for p in protected))
    except (OSError, RuntimeError):
        return None


@functools.lru_cache(maxsize=256)
def _problem(host: str, path: Path, protected: tuple[Path, ...]) -> str | None:
    fix = "bind a directory that holds no suite, no copy of toolproof and no run folder"
    roots = [(package_dir(), "toolproof's package (its built-in suites)")]
    roots += [(p, "the suite being loaded") for p in protected]
    for root, what in roots:
        if path == root or path.is_relative_to(root):
            return f"{host!r} is inside {root}, {what}: its answer keys; {fix}"
        if root.is_relative_to(path):
            return f"{host!r} holds {root}, {what}: its answer keys; {fix}"
    for folder in path.parents:
        found = _is_key(folder)
        if found is not None:
            return f"{host!r} is inside {folder}, {found}: its answer keys; {fix}"
    if not path.is_dir():
        return None
    try:
        below = _key_below(path)
    except OverflowError:
        return (
            f"{host!r} holds more than {MAX_ENTRIES:,} entries, too many to check that it "
            "shows no answer key (a suite, a clone of toolproof, a run); bind a smaller directory"
        )
    if below is None:
        return None
    where, what = below
    repository = next((f for f in (where, *where.parents) if (f / ".git").exists()), None)
    if repository is not None and repository.is_relative_to(path):
        return (
            f"{host!r} holds the git repository {repository}, with {where}, {what}: its "
            f"answer keys (and its .git their history); {fix}"
        )
    return f"{host!r} holds {where}, {what}: its answer keys; {fix}"
