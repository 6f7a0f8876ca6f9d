"""The installed ``bfcl-eval`` package: its version, its data files and its AST checker.

Nothing here copies BFCL: the data are read from the installed package with
:mod:`importlib.resources` and every verdict comes from ``bfcl_eval``'s own
``ast_checker``. One accommodation makes the light install work: the checker's
module imports ``bfcl_eval.constants.model_config``, which imports every model
handler and so every provider SDK, only to ask whether a model's function names
had their dots turned into underscores. toolproof maps tool names back to BFCL's
own names itself, so when that module cannot be imported a minimal stand-in with
one entry, :data:`CHECKER_MODEL`, is put in its place; with the full install the
real module is used and the same entry is added to it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import types
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

DISTRIBUTION = "bfcl-eval"
PINNED_VERSION = "2026.3.23"
"""The ``bfcl-eval`` release whose data and checker this integration was proven on."""
EXTRA_HINT = (
    "pip install --no-deps 'bfcl-eval==2026.3.23' filelock mpmath==1.3.0 "
    "(or pip install 'toolproof[bfcl]')"
)
CHECKER_MODEL = "toolproof"
"""The model name handed to BFCL's checker: its names are BFCL's own (dots kept)."""


class UpstreamMissing(ImportError):
    """The upstream package is not installed; the message names the install command."""


def installed_version() -> str | None:
    """The installed ``bfcl-eval`` version, or None when it is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def require() -> None:
    """Make sure ``bfcl-eval`` is installed (the multi-turn checker and backends need no
    model table, so none is imported: with the full install that would import every SDK).

    Raises:
        UpstreamMissing: ``bfcl-eval`` is not installed.
    """
    if installed_version() is None:
        raise UpstreamMissing(f"BFCL needs the bfcl-eval package: {EXTRA_HINT}")


@dataclass(frozen=True)
class _ModelConfig:
    """The one field of BFCL's ModelConfig that its AST checker reads."""

    underscore_to_dot: bool = False


def _model_config_module() -> None:
    """Make ``bfcl_eval.constants.model_config`` importable and know :data:`CHECKER_MODEL`."""
    name = "bfcl_eval.constants.model_config"
    module = sys.modules.get(name)
    if module is None:
        try:
            __import__(name)
            module = sys.modules[name]
        except ImportError:
            module = types.ModuleType(name, "toolproof's stand-in: no provider SDK is needed")
            module.MODEL_CONFIG_MAPPING = {}  # type: ignore[attr-defined]
            sys.modules[name] = module
    mapping = getattr(module, "MODEL_CONFIG_MAPPING")  # noqa: B009 - module built at run time
    mapping.setdefault(CHECKER_MODEL, _ModelConfig())


@cache
def ast_checker() -> Any:
    """BFCL's ``ast_checker`` function and its ``Language`` enum, imported once.

    Raises:
        UpstreamMissing: ``bfcl-eval`` is not installed.
    """
    if installed_version() is None:
        raise UpstreamMissing(f"BFCL needs the bfcl-eval package: {EXTRA_HINT}")
    _model_config_module()
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker as checker

    return checker, Language


def check(
    functions: list[dict[str, Any]],
    calls: list[dict[str, dict[str, Any]]],
    answer: list[dict[str, Any]],
    category: str,
    language: str,
) -> dict[str, Any]:
    """BFCL's verdict on one decoded response (``[{name: {arg: value}}]``)."""
    checker, language_enum = ast_checker()
    result: dict[str, Any] = checker(
        functions, calls, answer, language_enum[language.upper()], category, CHECKER_MODEL
    )
    return result


@cache
def _is_empty_output() -> Any:
    if installed_version() is None:
        raise UpstreamMissing(f"BFCL needs the bfcl-eval package: {EXTRA_HINT}")
    try:
        from bfcl_eval.utils import is_empty_output
    except ImportError as exc:
        raise UpstreamMissing(f"bfcl_eval.utils needs {exc.name}: pip install filelock") from None
    return is_empty_output


def is_empty_output(calls: list[dict[str, Any]]) -> bool:
    """BFCL's own test of "no function call" (irrelevance passes on it)."""
    return bool(_is_empty_output()(calls))


def _data_file(*parts: str) -> Any:
    root = resources.files("bfcl_eval") / "data"
    for part in parts:
        root = root / part
    return root


@cache
def load_entries(category: str) -> tuple[dict[str, Any], ...]:
    """The entries of ``BFCL_v4_<category>.json`` (one JSON object a line).

    Raises:
        UpstreamMissing: ``bfcl-eval`` is not installed.
        FileNotFoundError: no such category in the installed package.
    """
    if installed_version() is None:
        raise UpstreamMissing(f"BFCL needs the bfcl-eval package: {EXTRA_HINT}")
    text = _data_file(f"BFCL_v4_{category}.json").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


@cache
def function_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    """BFCL's function documents of one backend class (``multi_turn_func_doc/``)."""
    require()
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    path = _data_file("multi_turn_func_doc", MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name])
    text = path.read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


@cache
def load_answers(category: str) -> dict[str, list[Any]]:
    """Ground truth by entry id from ``possible_answer/BFCL_v4_<category>.json``."""
    path = _data_file("possible_answer", f"BFCL_v4_{category}.json")
    if not path.is_file():
        return {}
    out: dict[str, list[Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            out[str(item["id"])] = item["ground_truth"]
    return out


def data_root() -> Path:
    """The installed package's data directory (where the tasks come from)."""
    return Path(str(_data_file()))


@cache
def data_digest(category: str) -> str:
    """sha256 of a category's question and answer files as installed (and, for the
    multi-turn categories, the function documents their tools come from)."""
    sha = hashlib.sha256()
    paths = [
        _data_file(f"BFCL_v4_{category}.json"),
        _data_file("possible_answer", f"BFCL_v4_{category}.json"),
    ]
    if category.startswith("multi_turn"):
        docs = _data_file("multi_turn_func_doc")
        paths += sorted((p for p in docs.iterdir() if p.name.endswith(".json")), key=str)
    for path in paths:
        if path.is_file():
            sha.update(path.read_bytes())
        sha.update(b"\0")
    return sha.hexdigest()
