"""Finding suites and task files on disk: stdlib only, so ``toolproof list`` can use it
without loading the task models (:mod:`toolproof.spec.loader` re-exports these)."""

from __future__ import annotations

from pathlib import Path

from ._suggest import did_you_mean
from .errors import Problem, SpecError

TASK_SUFFIXES = (".yaml", ".yml", ".json")


def builtin_suites_dir() -> Path:
    """Directory holding the suites shipped inside the package (beside this package's
    folder: found from this file, as ``importlib.resources`` would on a file system,
    without importing it)."""
    return Path(__file__).resolve().parent.parent / "suites"


def builtin_suite_names() -> list[str]:
    """Names of the built-in suites."""
    root = builtin_suites_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "suite.yaml").is_file())


def resolve_suite_path(name_or_path: str | Path) -> Path:
    """Turn a built-in suite name or a directory into the suite directory.

    Raises:
        SpecError: neither a directory with suite.yaml nor a built-in name.
    """
    path = Path(name_or_path)
    if path.is_file() and path.name == "suite.yaml":
        return path.parent
    if (path / "suite.yaml").is_file():
        return path
    builtin = builtin_suites_dir() / str(name_or_path)
    if (builtin / "suite.yaml").is_file():
        return builtin
    if path.is_dir():
        raise SpecError([_missing_suite(path)])
    names = ", ".join(builtin_suite_names()) or "none"
    if "/" in str(name_or_path) or path.suffix:
        raise SpecError(
            [
                Problem(
                    path,
                    None,
                    "",
                    "no such file or directory; give a folder holding suite.yaml, a task file "
                    f"or a built-in suite name ({names})",
                )
            ]
        )
    raise SpecError(
        [
            Problem(
                None,
                None,
                "suite",
                f"no suite {str(name_or_path)!r}: no such file or directory, nor a built-in "
                f"suite name ({names}); give a folder holding suite.yaml, a task file or a name"
                + did_you_mean(str(name_or_path), builtin_suite_names()),
            )
        ]
    )


def task_files(root: Path) -> list[Path]:
    """Task files under a directory, sorted."""
    return sorted(p for p in root.rglob("*") if p.suffix in TASK_SUFFIXES and p.is_file())


def _missing_suite(path: Path) -> Problem:
    tasks = task_files(path)
    hint = (
        f"it holds {len(tasks)} task file(s); to check them alone, name them "
        f"(toolproof validate {path}/*.yaml)"
        if tasks
        else "a suite folder holds suite.yaml and tasks/*.yaml"
    )
    return Problem(
        path / "suite.yaml",
        None,
        "",
        "no suite.yaml: a suite needs one with at least name, version and canary "
        f"(see docs/writing-tasks.md); {hint}",
    )
