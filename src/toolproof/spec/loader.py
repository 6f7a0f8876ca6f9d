"""Load and validate suites and task files, turning every mistake into ``file:line`` problems."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import random
import re
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import arith
from ._find import TASK_SUFFIXES as TASK_SUFFIXES  # re-exported: callers import them here
from ._find import _missing_suite
from ._find import builtin_suite_names as builtin_suite_names
from ._find import builtin_suites_dir as builtin_suites_dir
from ._find import resolve_suite_path as resolve_suite_path
from ._find import task_files as task_files
from ._semantic import suite_problems, suite_root_of, task_problems
from ._suggest import did_you_mean
from ._yamlsrc import MAX_FILE_BYTES, Loc, SourceMap, load_document, number_problems
from ._yamlsrc import field_text as _field_text
from .errors import Problem, SpecError
from .providers import provided_suite
from .render import draw_params, instance_seed, render_template, render_value
from .suite import Suite, SuiteConfig
from .task import ParamSpec, Task


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _data_loc(loc: tuple[str | int, ...], data: Any) -> Loc:
    """Keep the parts of a pydantic ``loc`` that index into the data (drop union tags)."""
    kept: list[str | int] = []
    node = data
    for part in loc:
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        ):
            node = node[part] if isinstance(node, dict) else node[int(part)]
            kept.append(part)
        elif isinstance(node, dict) and isinstance(part, str):
            if any(ch in part for ch in "[]-") or part in _UNION_TAGS:
                continue  # a union member's tag, not a field of the document
            kept.append(part)  # a missing field: name it, stop descending
            break
    return tuple(kept)


@functools.cache
def _field_names() -> frozenset[str]:
    """Every field name of the task and suite models, nested ones too: the names a
    misspelt field is compared with ("did you mean")."""
    names: set[str] = set()
    seen: set[type] = set()

    def walk(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen:
                return
            seen.add(annotation)
            for name, info in annotation.model_fields.items():
                names.add(info.alias or name)
                walk(info.annotation)
        for arg in typing.get_args(annotation):
            walk(arg)

    walk(Task)
    walk(SuiteConfig)
    return frozenset(names)


_UNION_TAGS = {"state", "output", "process", "evidence", "custom", "str", "InlineTool"}


def _problems(
    exc: ValidationError, data: Any, source: SourceMap, prefix: Loc = ()
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[Loc, str]] = set()
    for error in exc.errors():
        loc = _data_loc((*prefix, *error["loc"]), data)
        kind = error["type"]
        if kind == "missing":
            message = "is required but missing; add it"
        elif kind == "extra_forbidden":
            message = "is not a known field; remove it or fix its spelling"
            if loc and isinstance(loc[-1], str):
                message += did_you_mean(loc[-1], _field_names() - {loc[-1]}, cutoff=0.75)
        else:
            message = error["msg"]
            if "input" in error and kind not in ("value_error", "assertion_error"):
                message += f", got {_describe(error['input'])}"
            message = message.replace("Value error, ", "")
        if (loc, message) in seen:
            continue
        seen.add((loc, message))
        problems.append(Problem(source.file, source.line_of(loc), _field_text(loc), message))
    return problems


M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], path: Path) -> tuple[M, SourceMap]:
    data, source = load_document(path)
    if not isinstance(data, dict):
        raise SpecError([Problem(path, 1, "", "expected a mapping of fields at the top level")])
    try:
        return model.model_validate(data), source
    except ValidationError as exc:
        raise SpecError(_problems(exc, data, source)) from None


def load_task(path: Path, config: SuiteConfig | None = None, root: Path | None = None) -> Task:
    """Load one task file: validate its parameters, render it, validate the result.

    Typed fields may hold templates (``number: "{{ total }}"``), so the task is
    validated as rendered with the epoch-0 parameters; a few more epochs are
    rendered to catch templates that only break for some draws. Paths it names
    must stay inside ``root``, the suite directory (default: the nearest folder
    above the file holding a suite.yaml).

    Raises:
        SpecError: every problem found, each naming file, line and field.
    """
    config = config or _default_config()
    root = root if root is not None else suite_root_of(path)
    data, source = load_document(path)
    if not isinstance(data, dict):
        raise SpecError([Problem(path, 1, "", "expected a mapping of fields at the top level")])
    try:
        specs = _PARAMS.validate_python(data.get("params") or {})
    except ValidationError as exc:
        raise SpecError(_problems(exc, data, source, prefix=("params",))) from None
    task_id = str(data.get("id", path.stem))
    problems: list[Problem] = []
    task: Task | None = None
    drawn: list[dict[str, Any]] = []
    for epoch in range(_EPOCHS_CHECKED):
        seed = instance_seed(config.seed, task_id, epoch)
        try:
            params = draw_params(specs, random.Random(seed))
            rendered = render_template(data, params)
        except arith.ExpressionError as exc:
            loc = _failing_expression(data, specs, seed)
            problems.append(
                Problem(path, source.line_of(loc), _field_text(loc), f"{exc} (epoch {epoch})")
            )
            break
        problems.extend(number_problems(rendered, source))
        if problems:
            problems = [_in_epoch(p, epoch) for p in problems]
            break
        try:
            candidate = Task.model_validate(rendered)
        except ValidationError as exc:
            problems.extend(_problems(exc, rendered, source))
            break
        drawn.append(params)
        if task is None:
            task = candidate
    if problems or task is None:
        raise SpecError(problems)
    task._template = data
    task._source = source
    task._drawn = drawn
    problems = task_problems(task, path, source, root, config)
    if problems:
        raise SpecError(problems)
    return task


def _in_epoch(problem: Problem, epoch: int) -> Problem:
    """``problem`` noting the epoch whose draw computed the bad value (none for epoch 0)."""
    if epoch == 0:
        return problem
    message = f"{problem.message} (as rendered for epoch {epoch})"
    return Problem(problem.file, problem.line, problem.field, message)


def _failing_expression(data: dict[str, Any], specs: dict[str, ParamSpec], seed: int) -> Loc:
    """Where the expression that failed to compute is: a parameter, a template or a ``when``."""
    params: dict[str, Any] = {}
    for name in specs:
        try:  # parameters draw in order from one generator, so a prefix draws the same values
            params = draw_params({n: specs[n] for n in [*params, name]}, random.Random(seed))
        except arith.ExpressionError:
            return ("params", name)

    def walk(value: Any, loc: Loc) -> Loc | None:
        if isinstance(value, str):
            try:
                if loc[-1:] == ("when",) and "solution" in loc:
                    arith.evaluate(value, params)
                render_value(value, params)
            except arith.ExpressionError:
                return loc
        if isinstance(value, dict):
            for key, item in value.items():
                if loc == () and key == "params":
                    continue
                found = walk(key, (*loc, key)) or walk(item, (*loc, key))
                if found is not None:
                    return found
        if isinstance(value, list):
            for index, item in enumerate(value):
                found = walk(item, (*loc, index))
                if found is not None:
                    return found
        return None

    return walk(data, ()) or ("params",)


_EPOCHS_CHECKED = 5
_PARAMS: TypeAdapter[dict[str, ParamSpec]] = TypeAdapter(dict[str, ParamSpec])


def _default_config() -> SuiteConfig:
    return SuiteConfig(name="adhoc", version="0", canary="adhoc")


def suite_digest(root: Path) -> str:
    """sha256 over the relative paths and contents of every file in the suite directory.

    A symlink counts by where it points, not by what it points to, so that a link in
    a suite can never make the harness read a file outside it (or a device). The files
    are those ``root.rglob("*")`` finds, in the order of their paths' parts, outside any
    ``__pycache__`` folder; they are walked with :func:`os.scandir` (a run of one task
    pays for this walk of the whole suite, so it is kept lean).
    """
    sha = hashlib.sha256()
    if "__pycache__" in root.parts:
        return sha.hexdigest()
    files: list[tuple[tuple[str, ...], str, bool]] = []
    _walk(str(root), (), files)
    files.sort(key=lambda found: found[0])
    for parts, path, link in files:
        sha.update("/".join(parts).encode())
        sha.update(b"\0")
        if link:
            sha.update(b"symlink:" + os.readlink(path).encode("utf-8", "surrogateescape"))
        else:
            with open(path, "rb") as file:
                sha.update(file.read())
        sha.update(b"\0")
    return sha.hexdigest()


def _walk(
    folder: str, parts: tuple[str, ...], files: list[tuple[tuple[str, ...], str, bool]]
) -> None:
    """Every link and regular file under ``folder`` as ``rglob("*")`` finds them (links
    to folders are not followed; an unreadable folder is skipped), with their parts."""
    try:
        with os.scandir(folder) as found:
            entries = list(found)
    except PermissionError:
        return
    for entry in entries:
        if entry.name == "__pycache__":
            continue
        inner = (*parts, entry.name)
        if entry.is_symlink():
            files.append((inner, entry.path, True))
        elif entry.is_dir():
            _walk(entry.path, inner, files)
        elif entry.is_file():
            files.append((inner, entry.path, False))


_QUICK_ID = re.compile(
    r"""^id:[ \t]+(?:"([a-z0-9][a-z0-9_.-]*)"|'([a-z0-9][a-z0-9_.-]*)'|([a-z0-9][a-z0-9_.-]*))"""
    r"[ \t]*(?:#.*)?\r?$",
    re.MULTILINE,
)


def quick_task_id(file: Path) -> str | None:
    """The task id a task file declares, read without parsing it: its one top-level
    ``id:`` line with a plain or simply quoted id; None when that is not certain (no such
    line, more than one, an anchor, a tag, unreadable bytes): then the file is loaded to
    know."""
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if len(data) > MAX_FILE_BYTES:  # refused when loaded, with its message
        return None
    if text.count("\nid:") + text.startswith("id:") != 1:
        return None
    # The one line that starts with ``id:`` is the only place the pattern can match (it
    # spans no line break): match it alone rather than search the whole text.
    start = 0 if text.startswith("id:") else text.index("\nid:") + 1
    end = text.find("\n", start)
    found = _QUICK_ID.match(text[start:] if end < 0 else text[start:end])
    if found is None:
        return None
    return str(next(part for part in found.groups() if part))


def _selected(file: Path, tasks: Sequence[str]) -> bool:
    """Whether the task file may hold a task matching ``tasks`` (globs): True unless its
    declared id is certain and matches none of them."""
    task_id = quick_task_id(file)
    return task_id is None or any(fnmatch.fnmatch(task_id, p) for p in tasks)


def _resolved(file: Path, folders: dict[Path, Path]) -> Path:
    """``file.resolve()``, each folder resolved once (in ``folders``): a file that is not a
    link resolves to its folder's resolved path and its own name, so only a link (or a
    folder not seen yet) costs a walk of every part of its path."""
    if file.is_symlink():
        return file.resolve()
    folder = folders.get(file.parent)
    if folder is None:
        folder = folders[file.parent] = file.parent.resolve()
    return folder / file.name


def load_suite(
    name_or_path: str | Path, *, allow_drift: bool = False, tasks: Sequence[str] = ()
) -> Suite:
    """Load a suite by built-in name or directory, validating every task.

    A name such as ``bfcl:simple_python`` is built from an installed package
    (:mod:`toolproof.spec.providers`); ``allow_drift`` accepts another version of it.

    With ``tasks`` (globs of task ids, as ``run --task``), only the task files that may
    hold a matching task are loaded and validated (a file's declared id is read without
    parsing it, :func:`quick_task_id`): a run of a few tasks of a large suite loads only
    those, and another task's broken file does not stop it (``validate`` loads them all).
    The suite's digest is of every file, as ever.

    Raises:
        SpecError: all problems of all files (of the selected ones) at once.
    """
    if not Path(name_or_path).exists():
        provided = provided_suite(str(name_or_path), allow_drift=allow_drift)
        if provided is not None:
            return provided
    root = resolve_suite_path(name_or_path)
    config, source = _parse(SuiteConfig, root / "suite.yaml")
    problems = suite_problems(config, root / "suite.yaml", source)
    if problems:
        raise SpecError(problems)
    loaded: list[Task] = []
    files: dict[str, Path] = {}
    inside = root.resolve()
    folders: dict[Path, Path] = {}
    for file in task_files(root / config.tasks):
        if not _resolved(file, folders).is_relative_to(inside):  # before any read: never outside
            problems.append(
                Problem(
                    file, None, "", f"a link to {file.resolve()}, outside the suite; copy it in"
                )
            )
            continue
        if tasks and not _selected(file, tasks):
            continue
        try:
            task = load_task(file, config, root)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        if task.id in files:
            problems.append(Problem(file, None, "id", f"duplicate of {files[task.id]}"))
            continue
        if tasks and not any(fnmatch.fnmatch(task.id, p) for p in tasks):
            continue  # loaded to learn its id (not certain without parsing): not selected
        files[task.id] = file
        loaded.append(task)
    if problems:
        raise SpecError(problems)
    suite = Suite(config=config, tasks=loaded, root=root, digest=suite_digest(root))
    suite._task_files.update(files)
    return suite


def load_task_file(path: Path) -> Task:
    """Load one task file as its suite would: with the suite's seed and paths, if it has one.

    Raises:
        SpecError: problems of the task file, or of the suite.yaml above it.
    """
    root = suite_root_of(path)
    config = None
    if (root / "suite.yaml").is_file():
        config, _ = _parse(SuiteConfig, root / "suite.yaml")
    return load_task(path, config, root)


def validate_target(target: str | Path) -> tuple[Suite | None, list[Task], list[Problem]]:
    """Load what ``toolproof validate TARGET`` names, the way ``run`` would.

    ``target`` is a built-in suite name, a suite folder, its suite.yaml, or one task
    file. A folder without suite.yaml is a problem (``run`` refuses it too).

    Returns:
        The suite (None for a task file), the tasks loaded, and every problem found.
    """
    path = Path(target)
    try:
        if path.is_file() and path.name != "suite.yaml":
            task = load_task_file(path)
            return None, [task], []
        if path.is_dir() and not (path / "suite.yaml").is_file():
            return None, [], [_missing_suite(path)]
        suite = load_suite(target)
    except SpecError as exc:
        return None, [], exc.problems
    return suite, suite.tasks, []


def validate_paths(paths: Iterable[Path]) -> list[Problem]:
    """Validate suites (names, folders with suite.yaml) and task files: every problem found.

    Only what the spec layer can check; :func:`toolproof.engine.preflight` adds the
    checks that need tools and check functions.
    """
    return [problem for path in paths for problem in validate_target(path)[2]]
